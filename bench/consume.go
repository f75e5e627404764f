package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumeConfig is a consume run. With neither Run.Count nor Run.Duration
// it reads the records present when it starts, once; with Run.Duration, or
// a Run.Count beyond what is present, it reads them in passes, as the copy
// baseline sends its file over and over: a partition that reaches its end
// offset goes back to its start.
type ConsumeConfig struct {
	Cluster Cluster
	Run     Run
	Fetch   FetchLoad
	// Load names the topic (Load.Topic) and says how Fill produces.
	Load ProduceLoad
	// Fill, if positive, first produces records until the topic holds at
	// least this many.
	Fill int64
	// Raw drops the client library: one connection per partition leader
	// sends Fetch requests built by hand, one in flight, and skips over
	// each record batch by its header without decoding a record, as the
	// copy baseline's reader drops what it reads. Bytes then count record
	// batch bytes.
	Raw bool
}

// Consume consumes Load.Topic from its start offsets and reports records/s,
// MB/s and the round trip of each Fetch request.
func Consume(ctx context.Context, cfg ConsumeConfig) (Report, error) {
	if err := cfg.Run.validate(false); err != nil {
		return Report{}, err
	}
	if err := cfg.Fetch.validate(); err != nil {
		return Report{}, err
	}
	if err := cfg.Load.validate(); err != nil {
		return Report{}, err
	}
	if cfg.Fill > 0 {
		if err := fillTopic(ctx, cfg.Cluster, &cfg.Load, cfg.Fill); err != nil {
			return Report{}, err
		}
	}
	p, err := planConsume(ctx, &cfg)
	if err != nil {
		return Report{}, err
	}
	m := newMeter("consume")
	run := consumeFranz
	if cfg.Raw {
		run = consumeRaw
	}
	took, err := run(ctx, &cfg, p, m)
	if err != nil {
		return Report{}, err
	}
	f := &cfg.Fetch
	settings := map[string]any{
		"topic": cfg.Load.Topic, "fetch_max_bytes": f.FetchMaxBytes,
		"partition_max_bytes": f.PartitionMaxBytes, "max_wait": f.MaxWait.String(),
		"count": cfg.Run.Count, "records_present": p.present, "duration": cfg.Run.Duration.String(),
	}
	if cfg.Raw {
		settings["raw"] = true
	}
	return Report{Command: "consume", Settings: settings, Results: []Result{m.result(took, "fetch round trip")}}, nil
}

// consumePlan is where a consume run starts and how much it reads.
type consumePlan struct {
	start   kadm.ListedOffsets
	offsets map[int32]int64 // partition → start offset
	// ends, when reading in passes, is each partition's end offset, where
	// it goes back to its start; nil: one pass.
	ends    map[int32]int64
	present int64 // records between the start and end offsets
	want    int64 // records to read
}

func planConsume(ctx context.Context, cfg *ConsumeConfig) (*consumePlan, error) {
	topic := cfg.Load.Topic
	start, end, err := topicOffsets(ctx, cfg.Cluster, topic)
	if err != nil {
		return nil, err
	}
	p := &consumePlan{start: start, offsets: map[int32]int64{}, ends: map[int32]int64{}, present: countBetween(start, end)}
	if p.present == 0 {
		return nil, fmt.Errorf("topic %s is empty: produce first (or give --fill)", topic)
	}
	// One pass over what is there, unless told to read more.
	passes := false
	switch c, d := cfg.Run.Count, cfg.Run.Duration; {
	case c > 0:
		p.want, passes = c, c > p.present
	case d > 0:
		p.want, passes = math.MaxInt64, true
	default:
		p.want = p.present
	}
	start.Each(func(o kadm.ListedOffset) { p.offsets[o.Partition] = o.Offset })
	end.Each(func(o kadm.ListedOffset) { p.ends[o.Partition] = o.Offset })
	if !passes {
		p.ends = nil
	}
	return p, nil
}

// consumeRaw reads as planned with hand-built Fetch requests.
func consumeRaw(ctx context.Context, cfg *ConsumeConfig, p *consumePlan, m *meter) (time.Duration, error) {
	return m.measure(ctx, &cfg.Run, func(ctx context.Context) error {
		return rawConsume(ctx, cfg.Cluster, cfg.Load.Topic, p.offsets, p.ends, &cfg.Fetch, m, p.want)
	})
}

// consumeFranz reads as planned with a franz-go consumer.
func consumeFranz(ctx context.Context, cfg *ConsumeConfig, p *consumePlan, m *meter) (time.Duration, error) {
	topic := cfg.Load.Topic
	cl, err := cfg.Cluster.client(ctx, append(cfg.Fetch.opts(),
		kgo.ConsumePartitions(exactOffsets(topic, p.start)),
		kgo.WithHooks(fetchTimer{m.latency}))...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var after func(kgo.Fetches)
	if p.ends != nil {
		after = (&rewinder{cl: cl, topic: topic, start: p.offsets, end: p.ends, done: map[int32]bool{}}).after
	}
	return m.measure(ctx, &cfg.Run, func(ctx context.Context) error {
		return consumeInto(ctx, cl, m, p.want, nil, after)
	})
}

// fetchTimer records the round trip of every Fetch request.
type fetchTimer struct{ h *histogram }

func (t fetchTimer) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key == int16(kmsg.Fetch) && e2e.Err() == nil {
		t.h.record(e2e.DurationE2E())
	}
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
func fillTopic(ctx context.Context, c Cluster, load *ProduceLoad, n int64) error {
	if err := ensureTopic(ctx, c, load.Topic, load.Partitions); err != nil {
		return err
	}
	start, end, err := topicOffsets(ctx, c, load.Topic)
	if err != nil {
		return err
	}
	have := countBetween(start, end)
	if have >= n {
		return nil
	}
	payload := randomPayload(load.RecordSize)
	m := newMeter("fill")
	if err := runProducers(ctx, c, load, m, &batchStats{}, n-have, func() []byte { return payload }); err != nil {
		return fmt.Errorf("fill %s: %w", load.Topic, err)
	}
	if got := m.records.Load(); got < n-have {
		return fmt.Errorf("fill %s: %d of %d records acknowledged", load.Topic, got, n-have)
	}
	return nil
}
