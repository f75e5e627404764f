package node

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/replication"
	"github.com/spool-log/spool/wire"
)

// AlterPartitionReassignments: v0-1
//
// Behavior:
// * Records each partition's target replica list in the catalog (a
//   membership.PartitionMove), which gossip spreads; the partition's Raft
//   leader then moves the replicas by membership changes (node/moves: step.go)
//   and, once the group's voters are the target, makes it the replica
//   list. The response says the move is recorded, not done: Metadata and
//   ListPartitionReassignments show its progress. Any node serves it.
// * Null Replicas cancels the partition's move: the target goes back to
//   the replica list the move started from, which the leader rolls the
//   group back to (NO_REASSIGNMENT_IN_PROGRESS when none is under way).
//   A target equal to the current list with no move is a no-op success.
// * The target must name distinct roster brokers, as many as the current
//   list (changing the replication factor is INVALID_REPLICATION_FACTOR,
//   whatever AllowReplicationFactorChange says); an even target, of a
//   topic created with an even factor before those were refused, is
//   INVALID_REPLICATION_FACTOR with the reason; a partition with a single
//   copy (no Raft group) cannot move (INVALID_REPLICA_ASSIGNMENT); an
//   unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION; a partition
//   named twice INVALID_REQUEST.
// * A failed save of the catalog is KAFKA_STORAGE_ERROR.
//
// Version notes:
// * v0: flexible
// * v1: AllowReplicationFactorChange (refused when it would be needed)

func (n *Node) handleAlterPartitionReassignments(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	if !n.access.Requester(ctx, wreq).MayCluster(kmsg.ACLOperationAlter) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code // as Kafka: ALTER on the cluster
		return resp
	}
	seen := map[tp]int{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			seen[tp{rt.Topic, rp.Partition}]++
		}
	}
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			var err error
			if seen[tp{rt.Topic, rp.Partition}] > 1 {
				err = &topicError{kerr.InvalidRequest, "partition named more than once in the request"}
			} else {
				err = topicRefusal(n.catalog.Reassign(rt.Topic, rp.Partition, rp.Replicas, replication.EvenFactorReason))
			}
			if err != nil {
				var te *topicError
				if !errors.As(err, &te) {
					n.log.WithError(err).WithField("topic", rt.Topic).WithField("partition", rp.Partition).Error("alter partition reassignment")
					te = &topicError{kerr.UnknownServerError, err.Error()}
				}
				sp.ErrorCode = te.err.Code
				msg := te.msg
				sp.ErrorMessage = &msg
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
