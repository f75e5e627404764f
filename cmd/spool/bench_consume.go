package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchLoad is how consume and e2e fetch.
type fetchLoad struct {
	fetchMaxBytes     int32
	partitionMaxBytes int32
	maxWait           time.Duration
}

func (f *fetchLoad) register(fs *pflag.FlagSet) {
	fs.Int32Var(&f.fetchMaxBytes, "fetch-max-bytes", 50<<20, "most bytes one Fetch response may carry (FetchMaxBytes)")
	fs.Int32Var(&f.partitionMaxBytes, "partition-max-bytes", 1<<20, "most bytes per partition in one Fetch (FetchMaxPartitionBytes)")
	fs.DurationVar(&f.maxWait, "max-wait", 500*time.Millisecond, "how long a Fetch waits for data (FetchMaxWait)")
}

func (f *fetchLoad) validate() error {
	if f.fetchMaxBytes < 1 || f.partitionMaxBytes < 1 {
		return errors.New("--fetch-max-bytes and --partition-max-bytes must be positive")
	}
	if f.maxWait < 0 {
		return errors.New("--max-wait must not be negative")
	}
	return nil
}

func (f *fetchLoad) opts() []kgo.Opt {
	return []kgo.Opt{
		kgo.FetchMaxBytes(f.fetchMaxBytes),
		kgo.FetchMaxPartitionBytes(f.partitionMaxBytes),
		kgo.FetchMaxWait(f.maxWait),
	}
}

// fetchTimer records the round trip of every Fetch request.
type fetchTimer struct{ h *histogram }

func (t fetchTimer) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key == int16(kmsg.Fetch) && e2e.Err() == nil {
		t.h.record(e2e.DurationE2E())
	}
}

// topicOffsets are the start and end offsets of every partition of a topic.
func topicOffsets(ctx context.Context, g *globals, topic string) (start, end kadm.ListedOffsets, err error) {
	adm, closeAdm, err := g.admin(ctx)
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

func newBenchConsumeCmd(g *globals) *cobra.Command {
	var (
		common benchCommon
		fetch  fetchLoad
		fill   int64
		load   produceLoad
		raw    bool
	)
	cmd := &cobra.Command{
		Use:   "consume",
		Short: "Consume a topic from its start as fast as the cluster serves it",
		Long: `Consume --topic from its start offsets and report records/s, MB/s and the
round trip of each Fetch request (p50, p99, p99.9). By default it reads the
records present when it starts (up to the end offsets it lists first), once.
With --duration, or a --count beyond what is present, it reads them in
passes, as the copy baseline sends its file over and over: a partition that
reaches its end offset goes back to its start, until the duration ends or
--count records arrived. With --fill N it first produces records until the
topic holds at least N.

With --raw there is no client library: one connection per partition leader
sends Fetch requests built by hand, one in flight, and skips over each record
batch by its header without decoding a record, as the copy baseline's reader
drops what it reads. MB/s then counts record batch bytes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if common.count == 0 && !cmd.Flags().Changed("duration") {
				common.duration = 0 // read what is there, however long that takes
			}
			if common.output != "text" && common.output != "json" {
				return fmt.Errorf("output %q: want text or json", common.output)
			}
			if err := fetch.validate(); err != nil {
				return err
			}
			topic := load.topic
			if err := load.validate(); err != nil {
				return err
			}
			ctx := cmd.Context()
			if fill > 0 {
				if err := fillTopic(ctx, g, &load, fill); err != nil {
					return err
				}
			}
			start, end, err := topicOffsets(ctx, g, topic)
			if err != nil {
				return err
			}
			present := countBetween(start, end)
			if present == 0 {
				return fmt.Errorf("topic %s is empty: produce first (or give --fill)", topic)
			}
			// One pass over what is there, unless told to read more: then,
			// as the copy baseline sends its file over and over, each
			// partition is read again from its start when it reaches its
			// end, until --count records or --duration.
			want, passes := present, false
			switch {
			case common.count > 0:
				want, passes = common.count, common.count > present
			case common.duration > 0:
				want, passes = math.MaxInt64, true
			}
			offsets, ends := map[int32]int64{}, map[int32]int64{}
			start.Each(func(o kadm.ListedOffset) { offsets[o.Partition] = o.Offset })
			end.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
			if !passes {
				ends = nil
			}

			m := newMeter("consume")
			if raw {
				rctx, cancel := common.context(ctx)
				defer cancel()
				m.start = time.Now()
				stop := m.progress(cmd.ErrOrStderr(), common.quiet)
				err := rawConsume(rctx, g, topic, offsets, ends, &fetch, m, want)
				elapsed := time.Since(m.start)
				stop()
				if err != nil {
					return err
				}
				rep := benchReport{Command: "consume", Settings: map[string]any{
					"topic": topic, "fetch_max_bytes": fetch.fetchMaxBytes, "raw": true,
					"partition_max_bytes": fetch.partitionMaxBytes, "max_wait": fetch.maxWait.String(),
					"count": common.count, "records_present": present, "duration": common.duration.String(),
				}, Results: []benchResult{m.result(elapsed, "fetch round trip")}}
				return rep.print(cmd.OutOrStdout(), common.output)
			}
			cl, err := g.client(ctx, append(fetch.opts(),
				kgo.ConsumePartitions(exactOffsets(topic, start)),
				kgo.WithHooks(fetchTimer{m.latency}))...)
			if err != nil {
				return err
			}
			defer cl.Close()

			rctx, cancel := common.context(ctx)
			defer cancel()
			m.start = time.Now()
			stop := m.progress(cmd.ErrOrStderr(), common.quiet)
			var after func(kgo.Fetches)
			if passes {
				after = (&rewinder{cl: cl, topic: topic, start: offsets, end: ends, done: map[int32]bool{}}).after
			}
			err = consumeInto(rctx, cl, m, want, nil, after)
			elapsed := time.Since(m.start)
			stop()
			if err != nil {
				return err
			}
			rep := benchReport{Command: "consume", Settings: map[string]any{
				"topic": topic, "fetch_max_bytes": fetch.fetchMaxBytes,
				"partition_max_bytes": fetch.partitionMaxBytes, "max_wait": fetch.maxWait.String(),
				"count": common.count, "records_present": present, "duration": common.duration.String(),
			}, Results: []benchResult{m.result(elapsed, "fetch round trip")}}
			return rep.print(cmd.OutOrStdout(), common.output)
		},
	}
	fs := cmd.Flags()
	common.register(fs, 0)
	fetch.register(fs)
	load.register(fs) // --topic, and the produce flags for --fill
	fs.Int64Var(&fill, "fill", 0, "first produce records (with the produce flags) until the topic holds at least this many")
	fs.BoolVar(&raw, "raw", false, "fetch with hand-built requests and count batches by their headers instead of using franz-go (see above)")
	fs.MarkHidden("max-inflight")
	return cmd
}

// rewinder sends a franz-go consumer back to the start offsets once every
// partition with records has reached its end offset: one SetOffsets a pass,
// as each restarts the client's fetching (dropping what it had buffered).
type rewinder struct {
	cl         *kgo.Client
	topic      string
	start, end map[int32]int64
	done       map[int32]bool
}

func (r *rewinder) after(fs kgo.Fetches) {
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if n := len(p.Records); n > 0 && p.Records[n-1].Offset+1 >= r.end[p.Partition] {
			r.done[p.Partition] = true
		}
	})
	for p, end := range r.end {
		if end > r.start[p] && !r.done[p] {
			return
		}
	}
	to := map[int32]kgo.EpochOffset{}
	for p, start := range r.start {
		to[p] = kgo.EpochOffset{Epoch: -1, Offset: start}
	}
	r.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{r.topic: to})
	clear(r.done)
}

// consumeInto polls until want records arrived or ctx ends. each, if not nil,
// sees every record as it arrives; after, if not nil, each poll's fetches
// once counted.
func consumeInto(ctx context.Context, cl *kgo.Client, m *meter, want int64, each func(*kgo.Record), after func(kgo.Fetches)) error {
	for m.records.Load() < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("fetch %s/%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		var recs, byts int64
		fs.EachRecord(func(r *kgo.Record) {
			recs++
			byts += int64(len(r.Key) + len(r.Value))
			if each != nil {
				each(r)
			}
		})
		m.add(recs, byts)
		if after != nil {
			after(fs)
		}
	}
	return nil
}

// fillTopic produces records until the topic holds at least n.
func fillTopic(ctx context.Context, g *globals, load *produceLoad, n int64) error {
	if err := ensureTopic(ctx, g, load.topic, load.partitions); err != nil {
		return err
	}
	start, end, err := topicOffsets(ctx, g, load.topic)
	if err != nil {
		return err
	}
	have := countBetween(start, end)
	if have >= n {
		return nil
	}
	payload := randomPayload(load.recordSize)
	m := newMeter("fill")
	if err := runProducers(ctx, g, load, m, &batchStats{}, n-have, func() []byte { return payload }); err != nil {
		return fmt.Errorf("fill %s: %w", load.topic, err)
	}
	if got := m.records.Load(); got < n-have {
		return fmt.Errorf("fill %s: %d of %d records acknowledged", load.topic, got, n-have)
	}
	return nil
}
