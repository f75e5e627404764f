package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// OffsetFetch: v0-9
//
// Behavior:
// * Committed offsets from the group's coordinator. A partition without a
//   commit, and every partition of a group that never existed, answers
//   offset -1 with no error, so a new consumer starts from its reset policy.
// * Null topics (v2+) return every partition the group committed.
// * Authorization: DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED;
//   DESCRIBE on each topic, else its partitions answer
//   TOPIC_AUTHORIZATION_FAILED when named and are left out of "all".
// * Answered only after a quorum of the offsets partition's replicas
//   confirmed, after the request arrived, that this node still leads it
//   (Raft ReadIndex): a deposed leader that has not heard so yet answers
//   NOT_COORDINATOR instead of offsets a newer leader may have moved on.
// * RequireStable (v7+, KIP-447): a partition with a transactional commit
//   awaiting its transaction's marker answers UNSTABLE_OFFSET_COMMIT, which
//   the client retries.
//
// Version notes:
// * v0: offsets were in ZooKeeper in Kafka; here v0 and v1 read the same store
// * v2: top-level ErrorCode, null topics for "all"
// * v5: LeaderEpoch
// * v6: flexible versions
// * v7: RequireStable
// * v8: several groups per request; each group is checked against its own
//   coordinator
// * v9: per group MemberID and MemberEpoch (KIP-848). Kafka checks them only
//   for consumer-protocol groups; for a classic group, the only kind Spool
//   has, it ignores them, and so does Spool.
// * v10 (topic ids, Kafka 4.2) is not offered.

func (n *Node) handleOffsetFetch(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.OffsetFetchRequest)
	who := n.requesterOf(ctx, wreq)
	if req.Version < 8 {
		coord, code := n.coords.Groups.For(req.Group)
		if !who.mayGroup(kmsg.ACLOperationDescribe, req.Group) {
			code = kerr.GroupAuthorizationFailed.Code
		}
		if code == 0 {
			code = n.coords.Groups.Confirm(ctx, coord, req.Group)
		}
		if code != 0 {
			resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = code
			for _, t := range req.Topics { // v0-1 carry the error per partition
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.ErrorCode = p, -1, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		}
		resp := coord.OffsetFetch(req)
		resp.Topics = offsetFetchVisible(who, req.Topics != nil, resp.Topics)
		return resp
	}

	// v8: answer the groups this node coordinates through the coordinator
	// and mark the rest NOT_COORDINATOR, keeping the request's order.
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	for _, rg := range req.Groups {
		coord, code := n.coords.Groups.For(rg.Group)
		if !who.mayGroup(kmsg.ACLOperationDescribe, rg.Group) {
			code = kerr.GroupAuthorizationFailed.Code
		}
		if code == 0 {
			code = n.coords.Groups.Confirm(ctx, coord, rg.Group)
		}
		if code != 0 {
			sg := kmsg.NewOffsetFetchResponseGroup()
			sg.Group, sg.ErrorCode = rg.Group, code
			resp.Groups = append(resp.Groups, sg)
			continue
		}
		one := *req
		one.Groups = []kmsg.OffsetFetchRequestGroup{rg}
		groups := coord.OffsetFetch(&one).Groups
		for i := range groups {
			groups[i].Topics = offsetFetchGroupVisible(who, rg.Topics != nil, groups[i].Topics)
		}
		resp.Groups = append(resp.Groups, groups...)
	}
	return resp
}

// offsetFetchVisible applies Kafka's topic rule to a group's offsets:
// DESCRIBE on a topic, else its partitions answer
// TOPIC_AUTHORIZATION_FAILED when asked for by name, and are left out of
// an "all topics" answer.
func offsetFetchVisible(who requester, named bool, topics []kmsg.OffsetFetchResponseTopic) []kmsg.OffsetFetchResponseTopic {
	out := topics[:0]
	for _, t := range topics {
		if who.mayTopic(kmsg.ACLOperationDescribe, t.Topic) {
			out = append(out, t)
			continue
		}
		if !named {
			continue
		}
		for i := range t.Partitions {
			t.Partitions[i].Offset, t.Partitions[i].LeaderEpoch, t.Partitions[i].Metadata = -1, -1, nil
			t.Partitions[i].ErrorCode = kerr.TopicAuthorizationFailed.Code
		}
		out = append(out, t)
	}
	return out
}

// offsetFetchGroupVisible is offsetFetchVisible for a v8+ group.
func offsetFetchGroupVisible(who requester, named bool, topics []kmsg.OffsetFetchResponseGroupTopic) []kmsg.OffsetFetchResponseGroupTopic {
	out := topics[:0]
	for _, t := range topics {
		if who.mayTopic(kmsg.ACLOperationDescribe, t.Topic) {
			out = append(out, t)
			continue
		}
		if !named {
			continue
		}
		for i := range t.Partitions {
			t.Partitions[i].Offset, t.Partitions[i].LeaderEpoch, t.Partitions[i].Metadata = -1, -1, nil
			t.Partitions[i].ErrorCode = kerr.TopicAuthorizationFailed.Code
		}
		out = append(out, t)
	}
	return out
}
