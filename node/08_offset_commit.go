package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// OffsetCommit: v0-9
//
// Behavior:
// * Served by the group's coordinator (package group): a member commits with
//   its member id and current generation (ILLEGAL_GENERATION,
//   UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS while the group completes a
//   rebalance, FENCED_INSTANCE_ID for a replaced static member); generation
//   -1 is a "simple" commit, accepted only while the group has no members.
// * Offsets are appended to __consumer_offsets and flushed before the
//   response, so an acknowledged commit survives a crash.
// * Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED for
//   every partition; READ on each topic, else TOPIC_AUTHORIZATION_FAILED
//   for its partitions (the others are committed).
// * Unknown topics or partitions get UNKNOWN_TOPIC_OR_PARTITION; metadata
//   over 4 KiB OFFSET_METADATA_TOO_LARGE.
//
// Version notes:
// * v1: Generation, MemberID, per-partition Timestamp (ignored: the commit
//   time is the broker's)
// * v2-4: RetentionTimeMillis (ignored: offsets do not expire)
// * v6: LeaderEpoch
// * v7: InstanceID
// * v8: flexible versions
// * v9: Generation is read as GenerationIDOrMemberEpoch (KIP-848). Spool's
//   groups are all classic groups, for which Kafka checks it as the
//   generation, exactly as in v8; consumer-protocol (KIP-848) groups do not
//   exist here.
// * v10 (topic ids, Kafka 4.2) is not offered.

func (n *Node) handleOffsetCommit(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.OffsetCommitRequest)
	who := n.requesterOf(ctx, wreq)
	if !who.mayGroup(kmsg.ACLOperationRead, req.Group) {
		return offsetCommitErrors(req, req.Topics, kerr.GroupAuthorizationFailed.Code)
	}
	var denied []kmsg.OffsetCommitRequestTopic
	allowed := req.Topics
	for i, t := range req.Topics {
		if !who.mayTopic(kmsg.ACLOperationRead, t.Topic) {
			if denied == nil {
				allowed = append([]kmsg.OffsetCommitRequestTopic(nil), req.Topics[:i]...)
			}
			denied = append(denied, t)
		} else if denied != nil {
			allowed = append(allowed, t)
		}
	}
	coord, code := n.coords.Groups.For(req.Group)
	if code != 0 {
		return offsetCommitErrors(req, req.Topics, code)
	}
	if denied == nil {
		return coord.OffsetCommit(req)
	}
	one := *req
	one.Topics = allowed
	resp := coord.OffsetCommit(&one)
	refused := offsetCommitErrors(req, denied, kerr.TopicAuthorizationFailed.Code)
	resp.Topics = append(resp.Topics, refused.Topics...)
	return resp
}

// offsetCommitErrors answers code for every partition of topics.
func offsetCommitErrors(req *kmsg.OffsetCommitRequest, topics []kmsg.OffsetCommitRequestTopic, code int16) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, t := range topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
