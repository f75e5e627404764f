package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// defaultMaxMessageBytes is Kafka's (and Spool's) max.message.bytes default,
// used when a node does not report the topic's.
const defaultMaxMessageBytes = 1 << 20

// produceTarget is what spool produce learns of a topic before it sends.
type produceTarget struct {
	partitions int32
	limit      int32  // largest batch the client builds
	limitFrom  string // where limit comes from, for the message when it is hit
	timeout    time.Duration
}

// lookupProduceTarget checks that topic exists (a missing one is an error
// with the command that creates it, even for empty input) and reads the
// record size limit: --max-record-bytes when given, else the topic's
// max.message.bytes.
func lookupProduceTarget(ctx context.Context, g Config, topic string, flagLimit int32) (produceTarget, error) {
	t := produceTarget{timeout: g.Timeout}
	adm, done, err := g.Admin(ctx)
	if err != nil {
		return t, err
	}
	defer done()
	actx, cancel := context.WithTimeout(ctx, g.Timeout)
	defer cancel()
	topics, err := adm.ListTopics(actx, topic)
	if err != nil {
		return t, fmt.Errorf("look up topic %s: %w", topic, err)
	}
	td, ok := topics[topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return t, fmt.Errorf("topic %s does not exist; create it first: spool topic create %s --partitions N", topic, topic)
	}
	if td.Err != nil {
		return t, fmt.Errorf("topic %s: %s", topic, explain(td.Err))
	}
	t.partitions = int32(len(td.Partitions))
	if flagLimit > 0 {
		t.limit, t.limitFrom = flagLimit, "--max-record-bytes"
		return t, nil
	}
	t.limit, t.limitFrom = defaultMaxMessageBytes, "max.message.bytes default"
	configs, err := adm.DescribeTopicConfigs(actx, topic)
	if err != nil {
		return t, nil // an older node: the default holds
	}
	rc, err := configs.On(topic, nil)
	if err != nil || rc.Err != nil {
		return t, nil
	}
	for _, c := range rc.Configs {
		if c.Key != "max.message.bytes" {
			continue
		}
		if v, err := strconv.ParseInt(c.MaybeValue(), 10, 32); err == nil && v > 0 {
			t.limit, t.limitFrom = int32(v), fmt.Sprintf("topic %s max.message.bytes; --max-record-bytes to change", topic)
		}
	}
	return t, nil
}

// cliPartitioner puts keyed records where Kafka's Java client would (murmur2
// of the key, whatever partitions are down, so a key keeps its partition) and
// deals unkeyed records round-robin over the partitions that have a leader,
// so a few lines of input spread over the topic instead of sticking to one.
type cliPartitioner struct{}

func (cliPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	return &cliTopicPartitioner{keyed: kgo.StickyKeyPartitioner(nil).ForTopic(topic)}
}

type cliTopicPartitioner struct {
	keyed kgo.TopicPartitioner
	next  int
}

func (p *cliTopicPartitioner) RequiresConsistency(r *kgo.Record) bool { return r.Key != nil }

func (p *cliTopicPartitioner) Partition(r *kgo.Record, n int) int {
	if r.Key != nil {
		return p.keyed.Partition(r, n)
	}
	i := p.next % n
	p.next++
	return i
}
