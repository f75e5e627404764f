package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/share"
	"github.com/spool-log/spool/node/topics"
	"github.com/spool-log/spool/wire"
)

// AlterShareGroupOffsets: v0
//
// Behavior:
// * READ on the group, else GROUP_AUTHORIZATION_FAILED; answered by its
//   coordinator, else NOT_COORDINATOR; a group with members is
//   NON_EMPTY_GROUP (as Kafka: offsets move only while nobody consumes).
//   A group id a classic or consumer group holds is GROUP_ID_NOT_FOUND.
//   READ on each topic, else TOPIC_AUTHORIZATION_FAILED.
// * Each partition's SPSO is set on the partition's leader (through its
//   admin listener when elsewhere), with nothing in flight, and is
//   durable in __share_group_state before the answer; an offset outside
//   [log start, high watermark] is OFFSET_OUT_OF_RANGE.
// * A group not known yet is created, empty, by its first alteration.

func (n *Node) handleAlterShareGroupOffsets(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	who := n.access.Requester(ctx, wreq)
	if _, code := n.groupCoordinatorAs(who, kmsg.ACLOperationRead, req.GroupID); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	coord, _ := n.coords.Shares.Get()
	if !coord.Has(req.GroupID) && n.coords.Shares.Taken(req.GroupID) {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	members, e := coord.Ensure(req.GroupID)
	switch {
	case e != nil:
		resp.ErrorCode = e.Code
		return resp
	case members > 0:
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		return resp
	}
	for _, rt := range req.Topics {
		t := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		t.Topic = rt.Topic
		spec, known := n.catalog.Topic(rt.Topic)
		t.TopicID = spec.ID
		for _, rp := range rt.Partitions {
			p := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			p.Partition = rp.Partition
			switch {
			case !who.MayTopic(kmsg.ACLOperationRead, rt.Topic):
				p.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case !known || topics.IsInternal(rt.Topic):
				p.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				k := share.Key{Group: req.GroupID, TopicPartition: share.TopicPartition{TopicID: spec.ID, Partition: rp.Partition}}
				p.ErrorCode = n.coords.Shares.OnLeader(share.OpReset, rt.Topic, k, rp.StartOffset)
				if p.ErrorCode == 0 {
					coord.Altered(req.GroupID, rt.Topic)
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}
