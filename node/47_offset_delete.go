package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// OffsetDelete: v0
//
// Behavior:
// * Deletes a group's committed offsets for the partitions named
// * Authorization: DELETE on the group, else GROUP_AUTHORIZATION_FAILED;
//   READ on each topic, else TOPIC_AUTHORIZATION_FAILED for its partitions.
//   (tombstones in __consumer_offsets, stored before the offsets leave
//   memory). An Empty group loses them all; a consumer group with members
//   keeps the offsets of topics a member subscribes to
//   (GROUP_SUBSCRIBED_TO_TOPIC per partition) and loses the others; a group
//   with members of another protocol type is NON_EMPTY_GROUP.
// * GROUP_ID_NOT_FOUND for an unknown group; NOT_COORDINATOR on a node
//   that does not coordinate the group (clients find it first).
// * A partition with no committed offset is answered without error.

func (n *Node) handleOffsetDelete(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.OffsetDeleteRequest)
	who := n.access.Requester(ctx, wreq)
	coord, code := n.groupCoordinatorAs(who, kmsg.ACLOperationDelete, req.Group)
	if code != 0 {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = code
		return resp
	}
	var denied []kmsg.OffsetDeleteRequestTopic
	allowed := req.Topics[:0:0]
	for _, t := range req.Topics {
		if who.MayTopic(kmsg.ACLOperationRead, t.Topic) {
			allowed = append(allowed, t)
		} else {
			denied = append(denied, t)
		}
	}
	if denied == nil {
		return coord.OffsetDelete(req)
	}
	one := *req
	one.Topics = allowed
	resp := coord.OffsetDelete(&one)
	for _, t := range denied {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
