package node

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/txn"
	"github.com/spool-log/spool/wire"
)

// EndTxn: v0-4
//
// Behavior:
// * Commits or aborts the producer's ongoing transaction at its
//   coordinator (node/txn), two-phase: PrepareCommit (PrepareAbort) is
//   stored in __transaction_state before the answer; the markers then go
//   to every partition of the transaction and CompleteCommit
//   (CompleteAbort) follows once all are committed. The answer waits for
//   that (5 s at most; the outcome is decided once Prepare is stored), so
//   the client's next transaction does not meet CONCURRENT_TRANSACTIONS.
//   A retry of a finished
//   EndTxn succeeds; a transaction still being ended gets
//   CONCURRENT_TRANSACTIONS; ending a transaction that is not Ongoing
//   otherwise is INVALID_TXN_STATE.
//
// Version notes:
// * v2: PRODUCER_FENCED (KIP-588; INVALID_PRODUCER_EPOCH before)
// * v3: flexible versions
// * v4: TRANSACTION_ABORTABLE may be returned (KIP-890; never here)
// * v5 (transactions v2: the epoch bumps on every EndTxn, KIP-890 part 2)
//   is not offered: franz-go pins EndTxn to v4 unless the cluster
//   advertises transaction.version 2, which Spool does not.

// endTxnMarkerWait bounds how long EndTxn waits for its markers after the
// decision is durable.
const endTxnMarkerWait = 5 * time.Second

func (n *Node) handleEndTxn(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if !n.requesterOf(ctx, wreq).mayTransactionalID(kmsg.ACLOperationWrite, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp
	}
	coord, code := n.coords.Txns.For(req.TransactionalID)
	if code == 0 {
		var done <-chan struct{}
		code, done = coord.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
		if done != nil {
			// The outcome is decided; waiting briefly for the markers
			// spares the client's next transaction a round of
			// CONCURRENT_TRANSACTIONS retries.
			t := time.NewTimer(endTxnMarkerWait)
			select {
			case <-done:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		}
	}
	resp.ErrorCode = txn.FencedCode(code, req.Version >= 2)
	return resp
}
