package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/access"
	"github.com/spool-log/spool/node/replication"
	"github.com/spool-log/spool/wire"
)

// CreatePartitions: v0-3
//
// Behavior:
// * Quota (KIP-599, node/access/quotas.go): the partitions created or deleted
//   count against the client's controller_mutation_rate. From v3+
//   (strict) a topic is refused with THROTTLING_QUOTA_EXCEEDED while the
//   client is over it; earlier versions are let through. Either way the
//   response carries ThrottleMillis until the client is back within it,
//   and the connection is muted as long. validate_only counts nothing.
// * Authorization: ALTER on the topic, else TOPIC_AUTHORIZATION_FAILED.
// * Raises a topic's partition count to Count in the catalog, under the
//   topic's id, so every node keeps what it holds and opens what it is
//   given; gossip spreads the change like a create. Any node serves it
//   (Metadata names the answering node controller).
// * New partitions are placed as a create of Count partitions would place
//   them (bounded-load rendezvous over the roster), or on the brokers of
//   Assignments when given: one list per new partition, of the topic's
//   replication factor, naming roster brokers, else
//   INVALID_REPLICA_ASSIGNMENT.
// * A Count not above the current one is INVALID_PARTITIONS; an unknown
//   topic UNKNOWN_TOPIC_OR_PARTITION; a topic named twice INVALID_REQUEST;
//   the internal __consumer_offsets INVALID_REQUEST (groups are hashed over
//   its count).
// * ValidateOnly checks everything and changes nothing.
// * The partitions this node holds are open before the response is sent.
//
// Version notes:
// * v1: ThrottleMillis
// * v2: flexible versions
// * v3: same as v2

func (n *Node) handleCreatePartitions(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	who := n.access.Requester(ctx, wreq)
	mq := n.access.MutationQuota(ctx, wreq, req.Version >= 3)
	seen := make(map[string]int, len(req.Topics))
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var err error
		if seen[rt.Topic] > 1 {
			err = &topicError{kerr.InvalidRequest, "topic named more than once in the request"}
		} else if !who.MayTopic(kmsg.ACLOperationAlter, rt.Topic) {
			err = &topicError{kerr.TopicAuthorizationFailed, "ALTER on the topic is needed"}
		} else {
			var assignment [][]int32
			if rt.Assignment != nil {
				assignment = make([][]int32, len(rt.Assignment))
				for i, a := range rt.Assignment {
					assignment[i] = a.Replicas
				}
			}
			if !req.ValidateOnly && mq.Refused() != nil {
				err = &topicError{kerr.ThrottlingQuotaExceeded, access.ErrMutationQuotaExceeded.Error()}
			}
			if err == nil {
				before, _ := n.catalog.Topic(rt.Topic)
				err = topicRefusal(n.parts.GrowTopic(rt.Topic, rt.Count, assignment, req.ValidateOnly, refuseEvenGrowth))
				if err == nil && !req.ValidateOnly {
					mq.Record(int(rt.Count - before.Partitions))
				}
			}
		}
		if err != nil {
			var te *topicError
			if !errors.As(err, &te) {
				n.log.WithError(err).WithField("topic", rt.Topic).Error("create partitions")
				te = &topicError{kerr.UnknownServerError, err.Error()}
			}
			st.ErrorCode = te.err.Code
			msg := te.msg
			st.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, st)
	}
	resp.ThrottleMillis = mq.Throttle(ctx)
	return resp
}

// refuseEvenGrowth refuses to grow a topic of an even factor: more
// partitions that survive no more than one copy fewer
// (replication_factor.go).
func refuseEvenGrowth(e *membership.TopicEntry) error {
	if e.ReplicationFactor%2 == 0 {
		return fmt.Errorf("%w: %s", membership.ErrInvalidReplicationFactor, replication.EvenFactorReason(int(e.ReplicationFactor)))
	}
	return nil
}
