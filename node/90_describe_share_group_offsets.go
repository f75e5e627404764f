package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/share"
	"github.com/spool-log/spool/wire"
)

// DescribeShareGroupOffsets: v0-1
//
// Behavior:
// * Per group: DESCRIBE on it, else GROUP_AUTHORIZATION_FAILED; answered
//   by its coordinator, else NOT_COORDINATOR; a group it does not keep is
//   GROUP_ID_NOT_FOUND. DESCRIBE on each topic, else
//   TOPIC_AUTHORIZATION_FAILED for its partitions.
// * Each partition's start offset (the SPSO) as __share_group_state
//   holds it (what is durable, not a leader's in-flight window); -1 for a
//   partition the group has not started. Lag (v1) is the high watermark
//   less the SPSO where this node can tell (-1 otherwise).
// * No topics (null) asks for every topic the group's members subscribe
//   to or whose offsets AlterShareGroupOffsets set here.
//
// Version notes:
// * v1: Lag (KIP-1226)

func (n *Node) handleDescribeShareGroupOffsets(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	who := n.access.Requester(ctx, wreq)
	coord, _ := n.coords.Shares.Get()
	persist := n.coords.Shares.Persister()
	for _, rg := range req.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		if _, code := n.groupCoordinatorAs(who, kmsg.ACLOperationDescribe, rg.GroupID); code != 0 {
			g.ErrorCode = code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if !coord.Has(rg.GroupID) {
			g.ErrorCode = kerr.GroupIDNotFound.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		topics := rg.Topics
		if topics == nil {
			for _, name := range coord.Topics(rg.GroupID) {
				if spec, ok := n.catalog.Topic(name); ok {
					t := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
					t.Topic = name
					for p := range spec.Partitions {
						t.Partitions = append(t.Partitions, p)
					}
					topics = append(topics, t)
				}
			}
		}
		for _, rt := range topics {
			t := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			t.Topic = rt.Topic
			spec, known := n.catalog.Topic(rt.Topic)
			t.TopicID = spec.ID
			for _, p := range rt.Partitions {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, -1, -1, -1
				switch {
				case !who.MayTopic(kmsg.ACLOperationDescribe, rt.Topic):
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case !known || p < 0 || p >= spec.Partitions:
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					k := share.Key{Group: rg.GroupID, TopicPartition: share.TopicPartition{TopicID: spec.ID, Partition: p}}
					snap, found, err := persist.Read(k)
					if err != nil {
						rp.ErrorCode = kerr.CoordinatorNotAvailable.Code
						break
					}
					if found {
						rp.StartOffset, rp.LeaderEpoch = snap.SPSO, snap.Epoch
						if lp := n.parts.Get(rt.Topic, p); lp != nil {
							rp.Lag = max(lp.Replica.HighWatermark()-snap.SPSO, 0)
						}
					}
				}
				t.Partitions = append(t.Partitions, rp)
			}
			g.Topics = append(g.Topics, t)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}
