package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// MaxLineBytes bounds one input line (one record) of Produce.
const MaxLineBytes = 16 << 20

// ProduceOptions is what Produce sends, and where.
type ProduceOptions struct {
	Topic string
	// Partition is where every record goes; -1 puts keyed records where
	// Kafka's Java client would (murmur2 of the key) and deals unkeyed ones
	// round-robin over the partitions that have a leader.
	Partition int32
	// KeySeparator, when set, splits each line at its first occurrence
	// into key and value.
	KeySeparator string
	// MaxRecordBytes is the largest batch sent; 0 is the topic's
	// max.message.bytes.
	MaxRecordBytes int32
	// Input holds one record per line.
	Input io.Reader
}

// Produce sends one record per line of o.Input to a topic that must exist.
// Once the input ends it waits at most Timeout for acknowledgements; the
// result says how many records each partition took and which were not
// written, and why. It returns an error, with that report, when any record
// was not written or the input could not be read to its end.
func (g Config) Produce(ctx context.Context, o ProduceOptions) (ProduceResult, error) {
	topic := o.Topic
	if o.Partition < -1 {
		return ProduceResult{}, fmt.Errorf("--partition %d: want a partition number, or -1 for the partitioner's choice", o.Partition)
	}
	if o.MaxRecordBytes < 0 {
		return ProduceResult{}, fmt.Errorf("--max-record-bytes %d: want a positive size, or 0 for the topic's max.message.bytes", o.MaxRecordBytes)
	}
	target, err := lookupProduceTarget(ctx, g, topic, o.MaxRecordBytes)
	if err != nil {
		return ProduceResult{}, err
	}
	if o.Partition >= target.partitions {
		return ProduceResult{}, fmt.Errorf("--partition %d: topic %s has %s (0..%d)", o.Partition, topic, plural(int(target.partitions), "partition"), target.partitions-1)
	}
	opts := []kgo.Opt{
		kgo.DefaultProduceTopic(topic),
		kgo.RecordDeliveryTimeout(g.Timeout),
		kgo.ProducerBatchMaxBytes(target.limit),
		kgo.RecordPartitioner(cliPartitioner{}),
	}
	if o.Partition >= 0 {
		opts[len(opts)-1] = kgo.RecordPartitioner(kgo.ManualPartitioner())
	}
	cl, err := g.Kafka(ctx, opts...)
	if err != nil {
		return ProduceResult{}, err
	}
	// Close waits for requests in flight; past the deadline nothing it
	// could still learn changes the report.
	defer closeWithin(cl, time.Second)

	tally := newProduceTally()
	readErr := sendLines(ctx, cl, o, tally)
	fctx, cancel := context.WithTimeout(ctx, g.Timeout)
	defer cancel()
	flushErr := cl.Flush(fctx)
	if flushErr != nil {
		// Fail what is still buffered, so its callback says which
		// partition it was for; what is in flight may stay unanswered.
		tally.pastDeadline()
		purgeWithin(cl, topic, time.Second)
	}
	res := tally.stop(topic, target)
	if readErr != nil {
		return res, fmt.Errorf("read stdin: %w; stopped there: %s", readErr, res)
	}
	if flushErr != nil || res.Written() < res.Total {
		return res, fmt.Errorf("produce to %s: %s", topic, res)
	}
	return res, nil
}

// sendLines produces each line of o.Input as one record. What was read
// before a bad line is still sent; the error says what was wrong with it.
func sendLines(ctx context.Context, cl *kgo.Client, o ProduceOptions, tally *produceTally) error {
	sc := bufio.NewScanner(o.Input)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	for sc.Scan() {
		line := sc.Text()
		r := &kgo.Record{Value: []byte(line), Partition: o.Partition}
		if o.KeySeparator != "" {
			if k, v, ok := strings.Cut(line, o.KeySeparator); ok {
				r.Key, r.Value = []byte(k), []byte(v)
			}
		}
		tally.sent()
		cl.Produce(ctx, r, tally.done)
	}
	err := sc.Err()
	if errors.Is(err, bufio.ErrTooLong) {
		err = fmt.Errorf("a line is longer than %d bytes, the most spool produce reads as one record", MaxLineBytes)
	}
	return err
}

// closeWithin closes cl, waiting at most d for it.
func closeWithin(cl *kgo.Client, d time.Duration) {
	done := make(chan struct{})
	go func() { cl.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// purgeWithin fails the records of topic still buffered in cl, and waits at
// most d for their callbacks.
func purgeWithin(cl *kgo.Client, topic string, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan struct{})
	go func() { cl.PurgeTopicsFromProducing(topic); close(done) }()
	select {
	case <-done:
		cl.Flush(ctx)
	case <-ctx.Done():
	}
}

// produceTally counts acknowledgements per partition and failures per
// partition and reason, until stop freezes it.
type produceTally struct {
	mu      sync.Mutex
	stopped bool
	late    bool // past the deadline: failures now are the purge's
	total   int
	ok      map[int32]int
	failed  map[int32]map[string]int // partition (-1: none chosen) -> reason -> count
}

func newProduceTally() *produceTally {
	return &produceTally{ok: map[int32]int{}, failed: map[int32]map[string]int{}}
}

func (t *produceTally) sent() {
	t.mu.Lock()
	t.total++
	t.mu.Unlock()
}

func (t *produceTally) done(r *kgo.Record, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	if err == nil {
		t.ok[r.Partition]++
		return
	}
	if t.failed[r.Partition] == nil {
		t.failed[r.Partition] = map[string]int{}
	}
	t.failed[r.Partition][t.reason(err)]++
}

// reason is a failure in words; limits name where they come from.
func (t *produceTally) reason(err error) string {
	if errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) {
		// franz-go tells the broker's refusal (it gives the batch's
		// compressed size) from its own check against our limit.
		if strings.Contains(err.Error(), ", compressed_bytes=") {
			return "record too large for the broker: above the topic's max.message.bytes"
		}
		return "record too large"
	}
	if t.late || errors.Is(err, context.DeadlineExceeded) {
		return "not acknowledged within --timeout"
	}
	return explain(err)
}

func (t *produceTally) pastDeadline() {
	t.mu.Lock()
	t.late = true
	t.mu.Unlock()
}

// stop freezes the tally into a result: what arrives later (a client
// closing) does not change what was reported.
func (t *produceTally) stop(topic string, target produceTarget) ProduceResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	res := ProduceResult{Topic: topic, Total: t.total, Timeout: target.timeout, Acked: maps.Clone(t.ok)}
	for _, p := range slices.Sorted(maps.Keys(t.failed)) {
		for _, reason := range slices.Sorted(maps.Keys(t.failed[p])) {
			n := t.failed[p][reason]
			if reason == "record too large" {
				reason = fmt.Sprintf("record too large: the limit is %d bytes (%s)", target.limit, target.limitFrom)
			}
			res.Failed = append(res.Failed, ProduceFailure{Partition: p, Records: n, Reason: reason})
		}
	}
	return res
}
