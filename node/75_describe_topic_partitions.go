package node

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/topics"
	"github.com/spool-log/spool/wire"
)

// DescribeTopicPartitions: v0
//
// Behavior:
// * Authorization: as Metadata, topics the principal may not DESCRIBE are
//   left out of "all" and TOPIC_AUTHORIZATION_FAILED when named.
// * Metadata's topic half, paginated (KIP-966): any node answers from its
//   catalog and cluster view, with the partitions described as Metadata
//   describes them (replicas in succession order; leader, leader epoch, ISR
//   and offline replicas from the replica where this node leads the
//   partition, else the leader's claim spread by node/leadership, else the
//   cluster view with epoch -1; until replication lands the first replica
//   leads while alive with ISR = [leader], LEADER_NOT_AVAILABLE when it is
//   down).
// * Topics empty lists every topic; named topics are listed sorted by name,
//   and an unknown one gets UNKNOWN_TOPIC_OR_PARTITION (never auto-created),
//   an invalid name INVALID_TOPIC_EXCEPTION.
// * ResponsePartitionLimit (at most, and by default, 2000; 0 or less means
//   2000) caps the partitions of one response; when it cuts a topic short or
//   leaves topics out, NextCursor names the first partition not sent.
//   Cursor starts the listing there; a cursor naming a topic outside the
//   requested ones is INVALID_REQUEST, as in Kafka, which fails the request:
//   every topic gets it.
// * EligibleLeaderReplicas and LastKnownELR are null: Spool has no ELR.
//   AuthorizedOperations is left at "not computed".

// maxDescribePartitions is Kafka's max.request.partition.size.limit default.
const maxDescribePartitions = 2000

func (n *Node) handleDescribeTopicPartitions(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	limit := int(req.ResponsePartitionLimit)
	if limit <= 0 || limit > maxDescribePartitions {
		limit = maxDescribePartitions
	}

	who := n.access.Requester(ctx, wreq)
	var names []string
	if len(req.Topics) == 0 {
		for _, spec := range n.catalog.Topics() {
			if who.MayTopic(kmsg.ACLOperationDescribe, spec.Name) {
				names = append(names, spec.Name)
			}
		}
	} else {
		for _, rt := range req.Topics {
			names = append(names, rt.Topic)
		}
		slices.Sort(names)
		names = slices.Compact(names)
	}
	startPartition := int32(0)
	if c := req.Cursor; c != nil {
		i, found := slices.BinarySearch(names, c.Topic)
		if !found && len(req.Topics) > 0 {
			for _, name := range names {
				st := kmsg.NewDescribeTopicPartitionsResponseTopic()
				st.Topic = kmsg.StringPtr(name)
				st.ErrorCode = kerr.InvalidRequest.Code
				resp.Topics = append(resp.Topics, st)
			}
			return resp
		}
		names = names[i:]
		if found {
			startPartition = max(c.Partition, 0)
		}
	}

	live := make(map[int32]bool)
	for _, b := range n.cluster.Brokers() {
		live[b.ID] = true
	}
	for ti, name := range names {
		st := kmsg.NewDescribeTopicPartitionsResponseTopic()
		st.Topic = kmsg.StringPtr(name)
		if err := membership.ValidateTopicName(name); err != nil {
			st.ErrorCode = kerr.InvalidTopicException.Code
			resp.Topics = append(resp.Topics, st)
			continue
		}
		if len(req.Topics) > 0 && !who.MayTopic(kmsg.ACLOperationDescribe, name) {
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, st)
			continue
		}
		spec, ok := n.catalog.Topic(name)
		if !ok {
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID = spec.ID
		st.IsInternal = topics.IsInternal(name)
		first := int32(0)
		if ti == 0 {
			first = startPartition
		}
		for p := first; p < spec.Partitions; p++ {
			if limit == 0 {
				resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: p}
				break
			}
			limit--
			st.Partitions = append(st.Partitions, describeTopicPartition(spec.Replicas[p], p,
				n.leaders.Of(spec, p, func(id int32) bool { return live[id] })))
		}
		resp.Topics = append(resp.Topics, st)
		if resp.NextCursor != nil {
			break
		}
		if limit == 0 && ti+1 < len(names) {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: names[ti+1], Partition: 0}
			break
		}
	}
	return resp
}

// describeTopicPartition describes partition p (its replicas, who leads
// it: ls) as Metadata does.
func describeTopicPartition(replicas []int32, p int32, ls replica.State) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	sp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	sp.Partition = p
	sp.Replicas = append([]int32{}, replicas...)
	sp.LeaderID, sp.LeaderEpoch, sp.ISR, sp.OfflineReplicas = ls.Leader, ls.LeaderEpoch, ls.ISR, ls.Offline
	if sp.LeaderID < 0 {
		sp.ErrorCode = kerr.LeaderNotAvailable.Code
	}
	return sp
}
