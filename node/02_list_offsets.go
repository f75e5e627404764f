package node

import (
	"context"
	"errors"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/partition"
	"github.com/spool-log/spool/wire"
)

// ListOffsets: v1-10
//
// Behavior:
// * Authorization: DESCRIBE on the topic, else TOPIC_AUTHORIZATION_FAILED
//   for each of its partitions.
// * Offsets come from the partition's replica (node/replica): timestamp -2
//   (earliest) is the log start offset — for a tiered topic the remote log
//   start when the store holds segments (node/tier.go) — and -1 (latest)
//   the high watermark, both with timestamp -1. Lookups see only committed
//   batches.
// * Timestamp -3 (max timestamp, v7) is the first record carrying the
//   largest timestamp in the log; the batch is found from the batch headers
//   (one small read per batch; clients rarely ask).
// * Timestamp -4 (earliest local, v8+) is the local log start offset.
// * Timestamp -5 (latest tiered, v9+) is the last offset in the store, or
//   offset -1, timestamp -1 and leader epoch -1 when nothing is tiered,
//   which is Kafka's answer for a topic without remote storage.
// * Timestamp T >= 0 is the first record whose timestamp is >= T: remote
//   segments below the local start are looked at first (batch headers
//   through the chunk cache); locally the time index finds the batch, then that one batch is read (and decompressed)
//   to find the record, as Kafka does (records.go). None gives offset -1
//   and timestamp -1.
// * Latest (-1) is the high watermark, or with read_committed
//   (IsolationLevel 1) the last stable offset (node/hosted's TxnIndex); other
//   timestamps do not depend on the isolation level.
//
// Version notes:
// * v1: single offset per partition (v0's OldStyleOffsets not offered)
// * v2: IsolationLevel
// * v4: CurrentLeaderEpoch in request, checked on the leader as in Fetch
//   (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH, KIP-320); LeaderEpoch in
//   response: the replica's leader epoch
// * v6: flexible versions
// * v7: max timestamp (-3)
// * v8: earliest local (-4, KIP-405)
// * v9: latest tiered (-5, KIP-1005)
// * v10: TimeoutMillis (KIP-1075), the wait for remote storage lookups:
//   ignored, none are made
// * v11 (-6, earliest pending upload, Kafka 4.2) is not offered.

const (
	listLatest        = -1
	listEarliest      = -2
	listMaxTime       = -3
	listEarliestLocal = -4
	listLatestTiered  = -5
)

func (n *Node) handleListOffsets(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	who := n.access.Requester(ctx, wreq)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		allowed := who.MayTopic(kmsg.ACLOperationDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Offset, sp.Timestamp, sp.LeaderEpoch = -1, -1, -1
			if !allowed {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else if e := n.listOffset(rt.Topic, rp, &sp, req.Version, req.IsolationLevel == 1); e != nil {
				sp.ErrorCode = e.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (n *Node) listOffset(topic string, rp kmsg.ListOffsetsRequestTopicPartition, sp *kmsg.ListOffsetsResponseTopicPartition, version int16, readCommitted bool) *kerr.Error {
	p, code := n.leaderPartition(topic, rp.Partition)
	if code != nil {
		return code
	}
	sp.LeaderEpoch = p.Replica.LeaderEpoch()
	if e := checkLeaderEpoch(rp.CurrentLeaderEpoch, sp.LeaderEpoch); e != nil {
		sp.LeaderEpoch = -1
		return e
	}
	switch ts := rp.Timestamp; {
	case ts == listEarliest:
		if n.remote(p).Behind() {
			sp.LeaderEpoch = -1
			return kerr.OffsetNotAvailable // the remote start is not known here yet (node/tier)
		}
		sp.Offset = n.remote(p).LogStart() // the remote start when tiered (node/tier)
	case ts == listEarliestLocal && version >= 8:
		sp.Offset = p.Replica.LogStartOffset()
	case ts == listLatestTiered && version >= 9:
		if end, ok := n.remote(p).End(); ok {
			sp.Offset = end - 1
		} else {
			sp.LeaderEpoch = -1 // offset and timestamp stay -1: nothing is tiered
		}
	case ts == listLatest && readCommitted:
		lso, err := p.Stable()
		if err != nil {
			return readError(n.log, topic, rp.Partition, err)
		}
		sp.Offset = lso
	case ts == listLatest:
		sp.Offset = p.Replica.HighWatermark()
	case ts == listMaxTime && version >= 7:
		maxTS, err := p.MaxTimestamp()
		if err != nil {
			return readError(n.log, topic, rp.Partition, err)
		}
		if maxTS < 0 {
			return nil // empty log
		}
		off, t, err := p.OffsetForTime(maxTS)
		if err != nil {
			return readError(n.log, topic, rp.Partition, err)
		}
		sp.Offset, sp.Timestamp = off, t
	case ts >= 0:
		if off, t, ok, err := n.remote(p).OffsetForTime(ts); err != nil {
			return readError(n.log, topic, rp.Partition, err)
		} else if ok {
			sp.Offset, sp.Timestamp = off, t
			return nil
		}
		off, t, err := p.OffsetForTime(ts)
		if err != nil {
			return readError(n.log, topic, rp.Partition, err)
		}
		sp.Offset, sp.Timestamp = off, t // -1, -1 when no record is that new
	default:
		return kerr.InvalidRequest
	}
	return nil
}

// readError is a lookup's error as the partition's code; a storage error
// is logged.
func readError(log logrus.FieldLogger, topic string, index int32, err error) *kerr.Error {
	switch {
	case errors.Is(err, partition.ErrClosed):
		return kerr.UnknownTopicOrPartition
	case errors.Is(err, partition.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange
	}
	log.WithError(err).WithField("topic", topic).WithField("partition", index).Error("offset lookup failed")
	return kerr.KafkaStorageError
}
