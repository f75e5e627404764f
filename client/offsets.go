package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Offsets are asked only of the partitions a command reads, each of its own
// leader: a partition whose node is down fails alone, and names itself.

// ListOffsets timestamps with a meaning of their own.
const (
	tsEnd   = -1
	tsStart = -2
)

// partitionRange is where one partition starts and ends, and where a
// position by time falls in it (-1: no record at or after that time).
type partitionRange struct {
	start, end, byTime int64
}

// topicPartitions looks topic up and returns its partition count and the
// partitions among want (all when want is empty) that have a leader, with
// the reason for each that has not. A missing topic or partition is an error.
func topicPartitions(ctx context.Context, adm *kadm.Client, topic string, want []int32) (count int32, live []int32, down map[int32]error, err error) {
	topics, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("look up topic %s: %w", topic, err)
	}
	td, ok := topics[topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return 0, nil, nil, fmt.Errorf("topic %s does not exist (spool topic list shows those that do)", topic)
	}
	if td.Err != nil {
		return 0, nil, nil, fmt.Errorf("topic %s: %s", topic, explain(td.Err))
	}
	count = int32(len(td.Partitions))
	for _, p := range want {
		if _, ok := td.Partitions[p]; !ok {
			return 0, nil, nil, fmt.Errorf("topic %s has no partition %d (it has %s: 0..%d)", topic, p, plural(int(count), "partition"), count-1)
		}
	}
	down = map[int32]error{}
	for _, pd := range td.Partitions.Sorted() {
		if len(want) > 0 && !slices.Contains(want, pd.Partition) {
			continue
		}
		switch {
		case pd.Err != nil:
			down[pd.Partition] = pd.Err
		case pd.Leader < 0:
			down[pd.Partition] = kerr.LeaderNotAvailable
		default:
			live = append(live, pd.Partition)
		}
	}
	return count, live, down, nil
}

// listOffsets asks each partition's leader for its offset at timestamp ts
// (tsStart, tsEnd or milliseconds). Partitions that fail are in failed.
func listOffsets(ctx context.Context, cl *kgo.Client, topic string, partitions []int32, ts int64) (offsets map[int32]int64, failed map[int32]error) {
	offsets, failed = map[int32]int64{}, map[int32]error{}
	if len(partitions) == 0 {
		return offsets, failed
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p
		rp.Timestamp = ts
		rp.CurrentLeaderEpoch = -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	for _, shard := range cl.RequestSharded(ctx, req) {
		if shard.Err != nil {
			for _, t := range shard.Req.(*kmsg.ListOffsetsRequest).Topics {
				for _, p := range t.Partitions {
					failed[p.Partition] = shard.Err
				}
			}
			continue
		}
		for _, t := range shard.Resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					failed[p.Partition] = err
					continue
				}
				offsets[p.Partition] = p.Offset
			}
		}
	}
	for _, p := range partitions {
		if _, ok := offsets[p]; !ok && failed[p] == nil {
			failed[p] = errors.New("no answer")
		}
	}
	return offsets, failed
}

// partitionRanges asks for start, end and (when pos needs it) by-time
// offsets of the live partitions; those that fail any lookup move to down.
func partitionRanges(ctx context.Context, cl *kgo.Client, topic string, live []int32, pos Position, down map[int32]error) map[int32]partitionRange {
	starts, f1 := listOffsets(ctx, cl, topic, live, tsStart)
	ends, f2 := listOffsets(ctx, cl, topic, live, tsEnd)
	var byTime map[int32]int64
	var f3 map[int32]error
	if pos.needsTimeLookup() {
		byTime, f3 = listOffsets(ctx, cl, topic, live, pos.time.UnixMilli())
	}
	out := map[int32]partitionRange{}
	for _, p := range live {
		if err := cmpOr(f1[p], f2[p], f3[p]); err != nil {
			down[p] = err
			continue
		}
		bt, ok := byTime[p]
		if !ok {
			bt = -1
		}
		out[p] = partitionRange{start: starts[p], end: ends[p], byTime: bt}
	}
	return out
}

// cmpOr is the first non-nil error.
func cmpOr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// describeDown is "partitions 1, 4 of T are unavailable (no leader: ...)".
func describeDown(topic string, down map[int32]error) string {
	byReason := map[string][]int32{}
	for p, err := range down {
		r := explain(err)
		byReason[r] = append(byReason[r], p)
	}
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(byReason)) {
		ps := byReason[r]
		verb := "is"
		if len(ps) > 1 {
			verb = "are"
		}
		parts = append(parts, fmt.Sprintf("%s of %s %s unavailable (%s)", partitionWord(ps), topic, verb, r))
	}
	return joinSemi(parts)
}
