package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ensureTopic creates the topic with partitions partitions unless it exists.
func ensureTopic(ctx context.Context, c Cluster, topic string, partitions int32) error {
	adm, closeAdm, err := c.admin(ctx)
	if err != nil {
		return err
	}
	defer closeAdm()
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	// Metadata can lag a creation for a moment; wait until every partition
	// has a leader so the first records are not spent on retries.
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if t, ok := md.Topics[topic]; ok && t.Err == nil && len(t.Partitions) > 0 && allLed(t.Partitions) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s has no leader for every partition: %w", topic, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func allLed(ps kadm.PartitionDetails) bool {
	for _, p := range ps {
		if p.Leader < 0 || p.Err != nil {
			return false
		}
	}
	return true
}

// topicOffsets are the start and end offsets of every partition of a topic.
func topicOffsets(ctx context.Context, c Cluster, topic string) (start, end kadm.ListedOffsets, err error) {
	adm, closeAdm, err := c.admin(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer closeAdm()
	if start, err = adm.ListStartOffsets(ctx, topic); err == nil {
		err = start.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("start offsets of %s: %w", topic, err)
	}
	if end, err = adm.ListEndOffsets(ctx, topic); err == nil {
		err = end.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	return start, end, nil
}

// countBetween is how many offsets lie between start and end, over all
// partitions.
func countBetween(start, end kadm.ListedOffsets) int64 {
	var n int64
	end.Each(func(e kadm.ListedOffset) {
		if s, ok := start.Lookup(e.Topic, e.Partition); ok && e.Offset > s.Offset {
			n += e.Offset - s.Offset
		}
	})
	return n
}

// exactOffsets turns listed offsets into consume positions.
func exactOffsets(topic string, lo kadm.ListedOffsets) map[string]map[int32]kgo.Offset {
	out := map[string]map[int32]kgo.Offset{topic: {}}
	lo.Each(func(o kadm.ListedOffset) {
		out[topic][o.Partition] = kgo.NewOffset().At(o.Offset)
	})
	return out
}

// partitionLeaders maps each partition of topic to its leader's address.
func partitionLeaders(ctx context.Context, c Cluster, topic string) (map[int32]string, error) {
	adm, closeAdm, err := c.admin(ctx)
	if err != nil {
		return nil, err
	}
	defer closeAdm()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	t, ok := md.Topics[topic]
	if !ok || t.Err != nil || len(t.Partitions) == 0 {
		return nil, fmt.Errorf("metadata of %s: no partitions (%v)", topic, t.Err)
	}
	addrs := map[int32]string{}
	for _, b := range md.Brokers {
		addrs[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	out := map[int32]string{}
	for _, p := range t.Partitions {
		addr, ok := addrs[p.Leader]
		if !ok {
			return nil, fmt.Errorf("partition %s/%d has no reachable leader", topic, p.Partition)
		}
		out[p.Partition] = addr
	}
	return out, nil
}
