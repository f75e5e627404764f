package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/share"
	"github.com/spool-log/spool/wire"
)

// ShareAcknowledge: v1-2
//
// Behavior:
// * Authorization as ShareFetch: READ on the group for the request, READ
//   on each topic for its partitions.
// * The member's share session on this node must exist
//   (SHARE_SESSION_NOT_FOUND) and the request name its next epoch
//   (INVALID_SHARE_SESSION_EPOCH; 0 is never valid here); -1 applies the
//   acknowledgements, then closes the session and releases what the
//   member still holds.
// * Each partition's batches are applied all or none on the partition's
//   leader: ACCEPT acknowledges, RELEASE makes the record available again
//   (archived once delivered share.delivery.count.limit times), REJECT
//   and GAP archive it; a record the member does not hold is
//   INVALID_RECORD_STATE, a malformed batch INVALID_REQUEST.
//
// Version notes:
// * v0: KIP-932's early access; not served (Kafka 4.1+ neither)
// * v2: IsRenewAck (KIP-1222): RENEW (type 4) extends the records' locks;
//   AcquisitionLockTimeoutMillis

func (n *Node) handleShareAcknowledge(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	var groupID, memberID string
	if req.GroupID != nil {
		groupID = *req.GroupID
	}
	if req.MemberID != nil {
		memberID = *req.MemberID
	}
	_, parts := n.coords.Shares.Get()
	resp.AcquisitionLockTimeoutMillis = int32(parts.GroupConfig(groupID).LockDuration.Milliseconds())
	who := n.requesterOf(ctx, wreq)
	if !who.mayGroup(kmsg.ACLOperationRead, groupID) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	if groupID == "" || memberID == "" || len(memberID) > 36 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	closing := req.ShareSessionEpoch == share.FinalEpoch
	if !closing {
		if e := parts.CheckSession(groupID, memberID, req.ShareSessionEpoch); e != nil {
			resp.ErrorCode = e.Code
			return resp
		}
	}
	renew := req.Version >= 2 && req.IsRenewAck
	for _, t := range req.Topics {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
			batches := shareAckBatches(p.AcknowledgementBatches, func(b kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) share.AckBatch {
				return share.AckBatch{First: b.FirstOffset, Last: b.LastOffset, Types: b.AcknowledgeTypes}
			})
			rp.ErrorCode = n.shareAcknowledge(who, groupID, memberID, share.TopicPartition{TopicID: t.TopicID, Partition: p.Partition}, batches, renew)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if closing {
		if e := parts.CloseSession(groupID, memberID); e != nil {
			resp.ErrorCode = e.Code
		}
	}
	return resp
}
