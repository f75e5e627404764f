package node

import (
	"context"
	"errors"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/topics"
	"github.com/spool-log/spool/partition"
	"github.com/spool-log/spool/wire"
)

// DeleteRecords: v0-2
//
// Behavior:
// * Authorization: DELETE on the topic, else TOPIC_AUTHORIZATION_FAILED.
// * Moves a partition's log start offset up to Offset (-1: the high
//   watermark), through the partition's replica (node/replica). The new start is checkpointed durably before the response;
//   fetches and ListOffsets below it get OFFSET_OUT_OF_RANGE from then on,
//   and retention deletes the segments wholly below it (one pass runs at
//   once). LowWatermark is the log start offset afterwards; an Offset at or
//   below it changes nothing.
// * An Offset past the high watermark, or negative other than -1, is
//   OFFSET_OUT_OF_RANGE.
// * __consumer_offsets is INVALID_TOPIC_EXCEPTION, as in Kafka: the group
//   coordinator replays it from its start to rebuild committed offsets.
// * Served by the partition's leader; elsewhere NOT_LEADER_OR_FOLLOWER, and
//   clients send each partition to its leader.
// * A replicated partition's new start is a Raft entry every replica
//   applies at its place in the log (node/replica/raftlog.DeleteBefore);
//   the answer waits until the leader applied it, so a majority holds it,
//   within TimeoutMillis (at least a second), else REQUEST_TIMED_OUT (it
//   may still apply). A single copy writes its checkpoint before the
//   answer.
//
// Version notes:
// * v1: ThrottleMillis
// * v2: flexible versions

func (n *Node) handleDeleteRecords(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	timeout := time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond
	who := n.access.Requester(ctx, wreq)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		allowed := who.MayTopic(kmsg.ACLOperationDelete, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			var code *kerr.Error
			var p *localPartition
			switch {
			case !allowed:
				code = kerr.TopicAuthorizationFailed
			case membership.ValidateTopicName(rt.Topic) != nil:
				code = kerr.UnknownTopicOrPartition
			case topics.IsInternal(rt.Topic):
				code = kerr.InvalidTopicException // the group coordinator replays it from the start
			default:
				if p, code = n.leaderPartition(rt.Topic, rp.Partition); code == nil {
					var err error
					sp.LowWatermark, err = p.DeleteRecords(ctx, rp.Offset, timeout)
					code = deleteRecordsCode(n.log, rt.Topic, rp.Partition, err)
				}
			}
			if code != nil {
				sp.ErrorCode = code.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// deleteRecordsCode is a partition's DeleteRecords error (node/hosted's
// DeleteRecords) as its code; a storage error is logged.
func deleteRecordsCode(log logrus.FieldLogger, topic string, index int32, err error) *kerr.Error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, partition.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange
	case errors.Is(err, replica.ErrNotLeader), errors.Is(err, partition.ErrClosed):
		return kerr.NotLeaderForPartition // deleted or closed meanwhile
	case errors.Is(err, replica.ErrOutcomeUnknown):
		return kerr.RequestTimedOut
	}
	log.WithError(err).WithFields(logrus.Fields{"topic": topic, "partition": index}).Error("delete records")
	return kerr.KafkaStorageError
}
