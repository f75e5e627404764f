package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// TxnOffsetCommit: v0-4
//
// Behavior:
// * Sent to the group's coordinator after AddOffsetsToTxn. The offsets
//   are stored in __consumer_offsets as a transactional batch of the
//   producer (node/group/txn_offsets.go) and become the group's committed
//   offsets only when the transaction's commit marker reaches that
//   partition; an abort drops them. OffsetFetch does not see them before.
// * v3+ with a generation >= 0: the member and generation are checked as
//   an OffsetCommit's (KIP-447), so a zombie of an old generation cannot
//   commit.
// * The producer's epoch is not checked here: the transaction
//   coordinator refuses to commit a fenced producer's transaction, and
//   only a commit marker makes these offsets visible.
//
// Version notes:
// * v2: LeaderEpoch per partition
// * v3: flexible versions; GenerationID, MemberID, GroupInstanceID
// * v4: TRANSACTION_ABORTABLE may be returned (KIP-890; never here)
// * v5 (transactions v2, implicit AddOffsetsToTxn) is not offered.

func (n *Node) handleTxnOffsetCommit(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.TxnOffsetCommitRequest)
	coord, code := n.groupCoordinatorFor(req.Group)
	if code == 0 && req.TransactionalID == "" {
		code = kerr.InvalidRequest.Code
	}
	if code != 0 {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	return coord.TxnOffsetCommit(req)
}
