package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// EndTxn: v0-4
//
// Behavior:
// * Commits or aborts the producer's ongoing transaction at its
//   coordinator (node/txn), two-phase: PrepareCommit (PrepareAbort) is
//   stored in __transaction_state before the answer; the markers then go
//   to every partition of the transaction and CompleteCommit
//   (CompleteAbort) follows once all are committed. A retry of a finished
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

func (n *Node) handleEndTxn(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	coord, code := n.txnCoordinatorFor(req.TransactionalID)
	if code == 0 {
		code = coord.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
	}
	resp.ErrorCode = fencedCode(code, req.Version >= 2)
	return resp
}
