package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/share"
	"github.com/spool-log/spool/wire"
)

// DeleteShareGroupOffsets: v0
//
// Behavior:
// * DELETE on the group, else GROUP_AUTHORIZATION_FAILED; answered by its
//   coordinator, else NOT_COORDINATOR; an unknown group is
//   GROUP_ID_NOT_FOUND, one with members NON_EMPTY_GROUP. READ on each
//   topic, else TOPIC_AUTHORIZATION_FAILED.
// * Every partition's share state of each topic is removed on the
//   partition's leader and tombstoned in __share_group_state: the group
//   starts the topic again by its share.auto.offset.reset. The first
//   partition error is the topic's.

func (n *Node) handleDeleteShareGroupOffsets(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	who := n.requesterOf(ctx, wreq)
	if _, code := n.groupCoordinatorAs(who, kmsg.ACLOperationDelete, req.GroupID); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	coord, _ := n.coords.Shares.Get()
	if !coord.Has(req.GroupID) {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	if members, _ := coord.Ensure(req.GroupID); members > 0 {
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		return resp
	}
	for _, rt := range req.Topics {
		t := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		t.Topic = rt.Topic
		spec, known := n.catalog.Topic(rt.Topic)
		t.TopicID = spec.ID
		switch {
		case !who.mayTopic(kmsg.ACLOperationRead, rt.Topic):
			t.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case !known:
			t.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			for p := range spec.Partitions {
				k := share.Key{Group: req.GroupID, TopicPartition: share.TopicPartition{TopicID: spec.ID, Partition: p}}
				if code := n.coords.Shares.OnLeader(share.OpDelete, rt.Topic, k, 0); code != 0 && t.ErrorCode == 0 {
					t.ErrorCode = code
				}
			}
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}
