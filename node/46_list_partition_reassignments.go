package node

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// ListPartitionReassignments: v0
//
// Behavior:
// * The moves under way, from this node's catalog: per partition Replicas
//   as Kafka reports them during a reassignment (the target, then the
//   replicas it leaves out), AddingReplicas (the target's new ones) and
//   RemovingReplicas (those the target leaves out).
// * Null Topics lists every move; named partitions that are unknown or
//   not moving are left out, as Kafka does.
//
// Version notes:
// * v0: flexible

func (n *Node) handleListPartitionReassignments(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !n.access.Requester(ctx, wreq).MayCluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code // as Kafka: DESCRIBE on the cluster
		return resp
	}
	var asked map[string][]int32
	if req.Topics != nil {
		asked = make(map[string][]int32, len(req.Topics))
		for _, t := range req.Topics {
			asked[t.Topic] = append(asked[t.Topic], t.Partitions...)
		}
	}
	for _, e := range n.agent.MovingTopics() {
		want, named := asked[e.Name]
		if asked != nil && !named {
			continue
		}
		st := kmsg.NewListPartitionReassignmentsResponseTopic()
		st.Topic = e.Name
		for _, m := range e.Moves {
			if asked != nil && !slices.Contains(want, m.Partition) {
				continue
			}
			sp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			sp.Partition = m.Partition
			sp.AddingReplicas = nonNil(e.Adding(m.Partition))
			sp.RemovingReplicas = nonNil(e.Removing(m.Partition))
			sp.Replicas = append(slices.Clone(m.Target), sp.RemovingReplicas...)
			st.Partitions = append(st.Partitions, sp)
		}
		if len(st.Partitions) > 0 {
			resp.Topics = append(resp.Topics, st)
		}
	}
	return resp
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}
