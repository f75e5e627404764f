package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// maxLineBytes bounds one input line (one record).
const maxLineBytes = 16 << 20

func newProduceCmd(g *globals) *cobra.Command {
	var (
		keySep         string
		partition      int32
		maxRecordBytes int32
	)
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Produce one record per line of stdin",
		Long: `Produce one record per line of standard input. With --key-separator, the text
before the first separator is the key and the rest the value. With --partition,
every record goes to that partition; otherwise keyed records go where Kafka's
Java client would put them (murmur2 of the key) and unkeyed ones go round-robin
over the partitions that have a leader.

The topic must exist (spool topic create). Once the input ends, spool produce
waits at most --timeout for acknowledgements; it then says how many records
each partition took and which were not written, and exits non-zero if any were
not. A record larger than the topic's max.message.bytes (or --max-record-bytes)
is refused.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTopics(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			if partition < -1 {
				return fmt.Errorf("--partition %d: want a partition number, or -1 for the partitioner's choice", partition)
			}
			if maxRecordBytes < 0 {
				return fmt.Errorf("--max-record-bytes %d: want a positive size, or 0 for the topic's max.message.bytes", maxRecordBytes)
			}
			ctx := cmd.Context()
			target, err := lookupProduceTarget(ctx, g, topic, maxRecordBytes)
			if err != nil {
				return err
			}
			if partition >= target.partitions {
				return fmt.Errorf("--partition %d: topic %s has %s (0..%d)", partition, topic, plural(int(target.partitions), "partition"), target.partitions-1)
			}
			opts := []kgo.Opt{
				kgo.DefaultProduceTopic(topic),
				kgo.RecordDeliveryTimeout(g.timeout),
				kgo.ProducerBatchMaxBytes(target.limit),
				kgo.RecordPartitioner(cliPartitioner{}),
			}
			if partition >= 0 {
				opts[len(opts)-1] = kgo.RecordPartitioner(kgo.ManualPartitioner())
			}
			cl, err := g.client(ctx, opts...)
			if err != nil {
				return err
			}
			// Close waits for requests in flight; past the deadline nothing
			// it could still learn changes the report.
			defer closeWithin(cl, time.Second)

			tally := newProduceTally()
			sc := bufio.NewScanner(cmd.InOrStdin())
			sc.Buffer(make([]byte, 64<<10), maxLineBytes)
			for sc.Scan() {
				line := sc.Text()
				r := &kgo.Record{Value: []byte(line), Partition: partition}
				if keySep != "" {
					if k, v, ok := strings.Cut(line, keySep); ok {
						r.Key, r.Value = []byte(k), []byte(v)
					}
				}
				tally.sent()
				cl.Produce(ctx, r, tally.done)
			}
			// What was read before a bad line is still sent and reported.
			readErr := sc.Err()
			if errors.Is(readErr, bufio.ErrTooLong) {
				readErr = fmt.Errorf("a line is longer than %d bytes, the most spool produce reads as one record", maxLineBytes)
			}
			fctx, cancel := context.WithTimeout(ctx, g.timeout)
			defer cancel()
			flushErr := cl.Flush(fctx)
			if flushErr != nil {
				// Fail what is still buffered, so its callback says which
				// partition it was for; what is in flight may stay unanswered.
				tally.pastDeadline()
				purgeWithin(cl, topic, time.Second)
			}
			tally.stop()
			if readErr != nil {
				return fmt.Errorf("read stdin: %w; stopped there: %s", readErr, tally.report(topic, target))
			}
			if flushErr != nil || tally.failures() > 0 {
				return fmt.Errorf("produce to %s: %s", topic, tally.report(topic, target))
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "produced %s\n", tally.report(topic, target))
			return nil
		},
	}
	cmd.Flags().StringVar(&keySep, "key-separator", "", "split each line into key and value at the first occurrence of this string")
	cmd.Flags().Int32Var(&partition, "partition", -1, "send every record to this partition (-1: let the partitioner choose)")
	cmd.Flags().Int32Var(&maxRecordBytes, "max-record-bytes", 0, "largest record batch to send, in bytes (0: the topic's max.message.bytes)")
	return cmd
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
// partition and reason, until stop freezes it: what arrives later (a
// client closing) does not change what was reported.
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

func (t *produceTally) stop() {
	t.mu.Lock()
	t.stopped = true
	t.mu.Unlock()
}

func (t *produceTally) failures() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total - sumValues(t.ok)
}

func sumValues(m map[int32]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// report is "3 records to T (partition 0: 2, partition 2: 1)" and, when some
// failed, which partitions did not take how many and why.
func (t *produceTally) report(topic string, target produceTarget) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	written := sumValues(t.ok)
	var b strings.Builder
	if written == t.total {
		fmt.Fprintf(&b, "%s to %s", plural(written, "record"), topic)
	} else {
		fmt.Fprintf(&b, "%d of %s written", written, plural(t.total, "record"))
	}
	if written > 0 {
		var parts []string
		for _, p := range slices.Sorted(maps.Keys(t.ok)) {
			parts = append(parts, fmt.Sprintf("partition %d: %d", p, t.ok[p]))
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	if written == t.total {
		return b.String()
	}
	var parts []string
	answered := 0
	for _, p := range slices.Sorted(maps.Keys(t.failed)) {
		for _, reason := range slices.Sorted(maps.Keys(t.failed[p])) {
			n := t.failed[p][reason]
			answered += n
			where := fmt.Sprintf("partition %d", p)
			if p < 0 {
				where = "no partition chosen"
			}
			if reason == "record too large" {
				reason = fmt.Sprintf("record too large: the limit is %d bytes (%s)", target.limit, target.limitFrom)
			}
			parts = append(parts, fmt.Sprintf("%s: %d, %s", where, n, reason))
		}
	}
	if rest := t.total - written - answered; rest > 0 {
		parts = append(parts, fmt.Sprintf("%d without an answer within --timeout %v (may or may not be written)", rest, target.timeout))
	}
	fmt.Fprintf(&b, "; not written: %s", strings.Join(parts, "; "))
	return b.String()
}
