package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/access"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/topicconfig"
	"github.com/spool-log/spool/node/topics"
	"github.com/spool-log/spool/wire"
)

// CreateTopics: v2-7 (v6 only adds THROTTLING_QUOTA_EXCEEDED, which Spool never
// returns; v7 returns the new topic's id)
//
// Behavior:
// * Quota (KIP-599, node/access/quotas.go): the partitions created or deleted
//   count against the client's controller_mutation_rate. From v6+
//   (strict) a topic is refused with THROTTLING_QUOTA_EXCEEDED while the
//   client is over it; earlier versions are let through. Either way the
//   response carries ThrottleMillis until the client is back within it,
//   and the connection is muted as long. validate_only counts nothing.
// * Authorization: CREATE on the cluster or on the topic, else
//   TOPIC_AUTHORIZATION_FAILED; the configs in the answer (v5+) need
//   DESCRIBE_CONFIGS on the topic, else the topic's config error is
//   TOPIC_AUTHORIZATION_FAILED and none are listed, as in Kafka.
// * NumPartitions -1 means DefaultPartitions; ReplicationFactor -1 means
//   DefaultReplicationFactor (--default-replication-factor, default 1),
//   lowered to the largest odd number not above the roster's brokers; a
//   factor above the brokers alive is INVALID_REPLICATION_FACTOR
//   (the cluster's Place decides whether a factor can be met).
// * An even factor, asked for or given by a manual assignment, is
//   INVALID_REPLICATION_FACTOR with the reason: a Raft group of 2 survives
//   no failure (node/replication/factor.go).
// * Configs retention.ms, retention.bytes, segment.bytes, segment.ms,
//   message.timestamp.type, max.message.bytes, cleanup.policy (delete,
//   compact or both), delete.retention.ms and min.cleanable.dirty.ratio are
//   accepted; anything else is INVALID_CONFIG, not silently dropped.
// * Manual replica assignments (kafka-topics --replica-assignment, sarama's
//   TopicDetail.ReplicaAssignment, kafka-go's ReplicaAssignments) are
//   recorded in the catalog as the placement, in the order given (the first
//   live replica leads), instead of rendezvous hashing. They are checked as
//   Kafka's controller does: NumPartitions and ReplicationFactor must be -1
//   (INVALID_PARTITIONS / INVALID_REPLICATION_FACTOR otherwise); every
//   broker must be in the roster, none twice in a partition, every
//   partition as many replicas as the first, no partition twice, and the
//   partitions 0..N-1 with none missing (INVALID_REPLICA_ASSIGNMENT).
// * ValidateOnly checks everything and creates nothing.
// * A created topic's partitions are open before the response is sent, so a
//   produce right after succeeds.
//
// Version notes:
// * v4: same as v3 (v4 exists for KIP-464 default partitions/replicas)
// * v5: flexible versions; NumPartitions, ReplicationFactor and Configs in
//   the response

// maxPartitionsPerTopic bounds what one request can make the node create:
// every partition is a directory and open files.
const maxPartitionsPerTopic = topics.MaxPartitions

// topicError is a Kafka error with a message for the client.
type topicError struct {
	err *kerr.Error
	msg string
}

func (e *topicError) Error() string { return e.err.Message + ": " + e.msg }

// refusalCodes are the Kafka codes of the catalog's refusals (node/topics).
var refusalCodes = map[error]*kerr.Error{
	topics.ErrInvalidName: kerr.InvalidTopicException, topics.ErrInternalTopic: kerr.InvalidRequest,
	topics.ErrInvalidPartitions: kerr.InvalidPartitions, topics.ErrInvalidAssignment: kerr.InvalidReplicaAssignment,
	topics.ErrReplicationFactor: kerr.InvalidReplicationFactor, topics.ErrInvalidConfig: kerr.InvalidConfig,
	topics.ErrChanged: kerr.NotController, topics.ErrNotDurable: kerr.KafkaStorageError,
	topics.ErrUnknownTopic: kerr.UnknownTopicOrPartition, topics.ErrTopicExists: kerr.TopicAlreadyExists,
	topics.ErrInvalidRequest: kerr.InvalidRequest, topics.ErrUnavailable: kerr.LeaderNotAvailable,
	topics.ErrNoReassignment: kerr.NoReassignmentInProgress, topics.ErrMoveRaced: kerr.RequestTimedOut,
}

// topicRefusal is a refusal of node/topics as the topicError the client
// sees; any other error as it is.
func topicRefusal(err error) error {
	var r *topics.Refusal
	if errors.As(err, &r) {
		return &topicError{refusalCodes[r.Reason], r.Msg}
	}
	return err
}

func kerrOf(err error) *kerr.Error {
	if err == nil {
		return nil
	}
	var te *topicError
	var r *topics.Refusal
	switch {
	case errors.As(err, &te):
		return te.err
	case errors.As(err, &r):
		return refusalCodes[r.Reason]
	case errors.Is(err, topics.ErrNotDurable):
		return kerr.KafkaStorageError // nothing changed: the client may retry
	case errors.Is(err, topics.ErrTopicExists):
		return kerr.TopicAlreadyExists
	case errors.Is(err, topics.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition
	case errors.Is(err, topics.ErrReplicationFactor):
		return kerr.InvalidReplicationFactor
	}
	return kerr.UnknownServerError
}

func (n *Node) handleCreateTopics(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	who := n.access.Requester(ctx, wreq)
	mq := n.access.MutationQuota(ctx, wreq, req.Version >= 6)
	seen := make(map[string]int)
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions = -1
		st.ReplicationFactor = -1
		fail := func(e *kerr.Error, msg string) {
			st.ErrorCode = e.Code
			if msg != "" {
				st.ErrorMessage = &msg
			}
		}
		configs := make(map[string]string, len(rt.Configs))
		var cfgErr string
		for _, c := range rt.Configs {
			if c.Value == nil {
				cfgErr = fmt.Sprintf("config %q has a null value", c.Name)
				continue
			}
			configs[c.Name] = *c.Value
		}
		switch {
		case seen[rt.Topic] > 1:
			fail(kerr.InvalidRequest, "topic named more than once in the request")
		case !who.MayCreateTopic(rt.Topic):
			fail(kerr.TopicAuthorizationFailed, "CREATE on the cluster or the topic is needed")
		case cfgErr != "":
			fail(kerr.InvalidConfig, cfgErr)
		case !req.ValidateOnly && mq.Refused() != nil:
			fail(kerr.ThrottlingQuotaExceeded, access.ErrMutationQuotaExceeded.Error())
		default:
			c := hosted.Create{Name: rt.Topic, Partitions: rt.NumPartitions, ReplicationFactor: rt.ReplicationFactor,
				Configs: configs, ValidateOnly: req.ValidateOnly}
			var err error
			if len(rt.ReplicaAssignment) > 0 {
				if c.Replicas, err = manualAssignment(rt, n.cluster.Roster()); err == nil {
					c.Partitions, c.ReplicationFactor = int32(len(c.Replicas)), int16(len(c.Replicas[0]))
				}
			}
			var spec TopicSpec
			if err == nil {
				spec, err = n.parts.CreateTopic(c)
			}
			if err = topicRefusal(err); err != nil {
				var te *topicError
				if errors.As(err, &te) {
					fail(te.err, te.msg)
				} else {
					n.log.WithError(err).WithField("topic", rt.Topic).Error("create topic")
					fail(kerr.UnknownServerError, err.Error())
				}
				break
			}
			if !req.ValidateOnly {
				mq.Record(int(spec.Partitions))
			}
			st.TopicID = spec.ID
			st.NumPartitions = spec.Partitions
			st.ReplicationFactor = spec.ReplicationFactor
			if req.Version >= 5 && !who.MayTopic(kmsg.ACLOperationDescribeConfigs, rt.Topic) {
				st.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
			} else if req.Version >= 5 {
				settings, _ := topicconfig.Parse(n.cfg.Topic, spec.Configs)
				for _, e := range settings.Describe() {
					c := kmsg.NewCreateTopicsResponseTopicConfig()
					c.Name = e.Name
					v := e.Value
					c.Value = &v
					c.Source = int8(kmsg.ConfigSourceDefaultConfig)
					if _, ok := spec.Configs[e.Name]; ok {
						c.Source = int8(kmsg.ConfigSourceDynamicTopicConfig)
					}
					st.Configs = append(st.Configs, c)
				}
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	resp.ThrottleMillis = mq.Throttle(ctx)
	return resp
}

// manualAssignment checks a request's replica assignment against the
// roster, as Kafka's controller does (ReplicationControlManager), and
// returns it as the catalog's per-partition replica lists.
func manualAssignment(rt kmsg.CreateTopicsRequestTopic, roster []int32) ([][]int32, error) {
	bad := func(format string, args ...any) error {
		return &topicError{kerr.InvalidReplicaAssignment, fmt.Sprintf(format, args...)}
	}
	if rt.ReplicationFactor != -1 {
		return nil, &topicError{kerr.InvalidReplicationFactor, "a manual partition assignment was specified, but replication factor was not set to -1"}
	}
	if rt.NumPartitions != -1 {
		return nil, &topicError{kerr.InvalidPartitions, "a manual partition assignment was specified, but numPartitions was not set to -1"}
	}
	if len(rt.ReplicaAssignment) > maxPartitionsPerTopic {
		return nil, &topicError{kerr.InvalidPartitions, "partitions must be between 1 and " + strconv.Itoa(maxPartitionsPerTopic)}
	}
	known := make(map[int32]bool, len(roster))
	for _, id := range roster {
		known[id] = true
	}
	byPartition := make(map[int32][]int32, len(rt.ReplicaAssignment))
	rf := -1
	for _, a := range rt.ReplicaAssignment {
		if _, dup := byPartition[a.Partition]; dup {
			return nil, bad("found multiple manual partition assignments for partition %d", a.Partition)
		}
		if len(a.Replicas) == 0 {
			return nil, bad("the manual partition assignment includes an empty replica list")
		}
		seen := make(map[int32]bool, len(a.Replicas))
		for _, id := range a.Replicas {
			if !known[id] {
				return nil, bad("the manual partition assignment includes broker %d, but no such broker is in the roster", id)
			}
			if seen[id] {
				return nil, bad("the manual partition assignment includes the broker %d more than once", id)
			}
			seen[id] = true
		}
		if rf >= 0 && len(a.Replicas) != rf {
			return nil, bad("the manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s)", len(a.Replicas), rf)
		}
		rf = len(a.Replicas)
		byPartition[a.Partition] = append([]int32(nil), a.Replicas...)
	}
	replicas := make([][]int32, len(byPartition))
	for i := range replicas {
		rs, ok := byPartition[int32(i)]
		if !ok {
			return nil, bad("partitions should be a consecutive 0-based integer sequence")
		}
		replicas[i] = rs
	}
	return replicas, nil
}
