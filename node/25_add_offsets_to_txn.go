package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/txn"
	"github.com/spool-log/spool/wire"
)

// AddOffsetsToTxn: v0-4
//
// Behavior:
// * Adds the group's __consumer_offsets partition to the transaction, at
//   the transaction's coordinator, so that its commit marker makes the
//   offsets the producer then sends with TxnOffsetCommit (to the group's
//   coordinator) visible, and its abort marker drops them. Checks as
//   AddPartitionsToTxn's.
//
// Version notes:
// * v2: PRODUCER_FENCED (KIP-588; INVALID_PRODUCER_EPOCH before)
// * v3: flexible versions
// * v4: TRANSACTION_ABORTABLE may be returned (KIP-890; never here)

func (n *Node) handleAddOffsetsToTxn(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	who := n.requesterOf(ctx, wreq)
	switch {
	case !who.mayTransactionalID(kmsg.ACLOperationWrite, req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp
	case !who.mayGroup(kmsg.ACLOperationRead, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	coord, code := n.coords.Txns.For(req.TransactionalID)
	if code == 0 {
		code = coord.AddOffsets(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group)
	}
	resp.ErrorCode = txn.FencedCode(code, req.Version >= 2)
	return resp
}
