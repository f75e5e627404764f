package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/coord"
	"github.com/spool-log/spool/node/group"
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
// * The transaction coordinator is asked, as for a transactional
//   produce (node/coord: Txns.Verify), whether the producer (id, epoch) has an
//   ongoing transaction holding the group's __consumer_offsets partition
//   (AddOffsetsToTxn): if not, INVALID_TXN_STATE; a fenced producer,
//   INVALID_PRODUCER_EPOCH (PRODUCER_FENCED where the group's own check,
//   v3+, finds it first); the coordinator out of reach,
//   COORDINATOR_NOT_AVAILABLE (retriable).
//
// Version notes:
// * v2: LeaderEpoch per partition
// * v3: flexible versions; GenerationID, MemberID, GroupInstanceID
// * v4: TRANSACTION_ABORTABLE may be returned (KIP-890; never here)
// * v5 (transactions v2, implicit AddOffsetsToTxn) is not offered.

func (n *Node) handleTxnOffsetCommit(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.TxnOffsetCommitRequest)
	who := n.requesterOf(ctx, wreq)
	// As Kafka: WRITE on the transactional id, then READ on the group, then
	// READ on each topic (only the refused topics' partitions fail).
	var code int16
	switch {
	case !who.mayTransactionalID(kmsg.ACLOperationWrite, req.TransactionalID):
		code = kerr.TransactionalIDAuthorizationFailed.Code
	case !who.mayGroup(kmsg.ACLOperationRead, req.Group):
		code = kerr.GroupAuthorizationFailed.Code
	}
	denied := map[string]bool{}
	if code == 0 {
		for _, t := range req.Topics {
			if !who.mayTopic(kmsg.ACLOperationRead, t.Topic) {
				denied[t.Topic] = true
			}
		}
	}
	var coord *group.Coordinator
	if code == 0 {
		coord, code = n.coords.Groups.For(req.Group)
	}
	if code == 0 && req.TransactionalID == "" {
		code = kerr.InvalidRequest.Code
	}
	if code == 0 {
		code = n.verifyTxnOffsets(ctx, req)
	}
	if code != 0 || len(denied) > 0 {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			c := code
			if c == 0 && denied[t.Topic] {
				c = kerr.TopicAuthorizationFailed.Code
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, c
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if code != 0 {
			return resp
		}
		allowed := *req
		allowed.Topics = nil
		for _, t := range req.Topics {
			if !denied[t.Topic] {
				allowed.Topics = append(allowed.Topics, t)
			}
		}
		if len(allowed.Topics) > 0 {
			got := coord.TxnOffsetCommit(&allowed)
			resp.Topics = mergeTxnOffsetTopics(resp.Topics, got.Topics)
			resp.ThrottleMillis = got.ThrottleMillis
		}
		return resp
	}
	return coord.TxnOffsetCommit(req)
}

// mergeTxnOffsetTopics puts the coordinator's answers for the allowed
// topics in place of their entries.
func mergeTxnOffsetTopics(all, got []kmsg.TxnOffsetCommitResponseTopic) []kmsg.TxnOffsetCommitResponseTopic {
	byTopic := make(map[string]kmsg.TxnOffsetCommitResponseTopic, len(got))
	for _, t := range got {
		byTopic[t.Topic] = t
	}
	for i, t := range all {
		if g, ok := byTopic[t.Topic]; ok {
			all[i] = g
		}
	}
	return all
}

// verifyTxnOffsets asks the transaction coordinator whether req's
// producer holds the group's partition in an ongoing transaction.
func (n *Node) verifyTxnOffsets(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) int16 {
	parts := n.coords.Groups.Partitions()
	vr := coord.VerifyRequest{TxnID: req.TransactionalID, ProducerID: req.ProducerID, Epoch: req.ProducerEpoch,
		Topic: group.TopicName, Partition: group.PartitionFor(req.Group, parts)}
	code, err := n.coords.Txns.Verify(ctx, vr)
	if err != nil {
		n.log.WithError(err).WithField("transactional_id", req.TransactionalID).Debug("transactional offset commit not verified")
		return kerr.CoordinatorNotAvailable.Code
	}
	switch code {
	case 0:
		return 0
	case kerr.ProducerFenced.Code, kerr.InvalidProducerEpoch.Code:
		return kerr.InvalidProducerEpoch.Code
	case kerr.InvalidProducerIDMapping.Code:
		return kerr.InvalidProducerIDMapping.Code
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.ConcurrentTransactions.Code:
		return kerr.CoordinatorNotAvailable.Code
	default:
		return kerr.InvalidTxnState.Code
	}
}
