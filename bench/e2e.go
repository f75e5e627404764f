package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// stampBytes is the send time, in nanoseconds since the run began, that
// starts every end-to-end record's value.
const stampBytes = 8

// EndToEndConfig is an end-to-end run.
type EndToEndConfig struct {
	Cluster Cluster
	Run     Run
	Load    ProduceLoad
	Fetch   FetchLoad
	// Drain is how long the consumer may trail the producers once they
	// stop.
	Drain time.Duration
}

// EndToEnd produces as Produce does while one consumer reads the same topic
// from the end offsets it listed before the first record, and reports the
// consumer's records/s and MB/s and each record's latency from being handed
// to the producer to being returned by the consumer's poll. Every value
// starts with its 8-byte send time, so Load.RecordSize is at least 8.
func EndToEnd(ctx context.Context, cfg EndToEndConfig) (Report, error) {
	l := &cfg.Load
	if err := cfg.validate(); err != nil {
		return Report{}, err
	}
	if err := ensureTopic(ctx, cfg.Cluster, l.Topic, l.Partitions); err != nil {
		return Report{}, err
	}
	_, end, err := topicOffsets(ctx, cfg.Cluster, l.Topic)
	if err != nil {
		return Report{}, err
	}
	cl, err := cfg.Cluster.client(ctx, append(cfg.Fetch.opts(), kgo.ConsumePartitions(exactOffsets(l.Topic, end)))...)
	if err != nil {
		return Report{}, err
	}
	defer cl.Close()

	consumed, produced := newMeter("e2e"), newMeter("produce")
	begin := time.Now()
	consumed.start, produced.start = begin, begin
	stop := consumed.progress(&cfg.Run)
	// The consumer runs until it has every acknowledged record, or Drain
	// after the producers stop.
	cctx, cancelConsume := context.WithCancel(ctx)
	defer cancelConsume()
	consumeErr := make(chan error, 1)
	go func() { consumeErr <- consumeStamped(cctx, cl, consumed, begin) }()
	perr := produceStamped(ctx, &cfg, produced, begin)
	want := produced.records.Load()
	cerr := drain(consumed, want, cfg.Drain, consumeErr)
	elapsed := time.Since(begin)
	cancelConsume()
	stop()
	if perr != nil {
		return Report{}, perr
	}
	if cerr != nil && !errors.Is(cerr, context.Canceled) {
		return Report{}, cerr
	}
	res := consumed.result(elapsed, "send to receipt")
	if missing := want - consumed.records.Load(); missing > 0 {
		res.Errors += missing
		cfg.Run.note("e2e: %d acknowledged records not consumed within --drain %v", missing, cfg.Drain)
	}
	res.Extra = map[string]float64{"produced": float64(want)}
	if l := produced.latency.summary(""); l.Samples > 0 {
		res.Extra["produce_p99_ms"] = l.P99
	}
	settings := l.settings()
	settings["duration"], settings["count"] = cfg.Run.Duration.String(), cfg.Run.Count
	settings["max_wait"] = cfg.Fetch.MaxWait.String()
	return Report{Command: "e2e", Settings: settings, Results: []Result{res}}, nil
}

func (cfg *EndToEndConfig) validate() error {
	if err := cfg.Run.validate(true); err != nil {
		return err
	}
	if err := cfg.Load.validate(); err != nil {
		return err
	}
	if err := cfg.Fetch.validate(); err != nil {
		return err
	}
	if cfg.Load.RecordSize < stampBytes {
		return fmt.Errorf("--record-size %d: e2e needs at least %d bytes for the send time", cfg.Load.RecordSize, stampBytes)
	}
	return nil
}

// produceStamped produces for the run, each value starting with its send
// time since begin.
func produceStamped(ctx context.Context, cfg *EndToEndConfig, m *meter, begin time.Time) error {
	payload := randomPayload(cfg.Load.RecordSize)
	pctx, cancel := cfg.Run.context(ctx)
	defer cancel()
	return runProducers(pctx, cfg.Cluster, &cfg.Load, m, &batchStats{}, cfg.Run.Count, func() []byte {
		v := make([]byte, len(payload))
		copy(v, payload)
		binary.BigEndian.PutUint64(v, uint64(time.Since(begin)))
		return v
	})
}

// consumeStamped consumes until ctx ends, recording each record's latency
// from the send time it starts with.
func consumeStamped(ctx context.Context, cl *kgo.Client, m *meter, begin time.Time) error {
	return consumeInto(ctx, cl, m, 1<<62, func(r *kgo.Record) {
		if len(r.Value) >= stampBytes {
			sent := begin.Add(time.Duration(binary.BigEndian.Uint64(r.Value)))
			m.latency.record(time.Since(sent))
		}
	}, nil)
}

// drain waits until the consumer counted want records, it failed, or
// timeout passed, and returns the consumer's error if it ended.
func drain(consumed *meter, want int64, timeout time.Duration, consumeErr <-chan error) error {
	deadline := time.Now().Add(timeout)
	for consumed.records.Load() < want {
		select {
		case err := <-consumeErr:
			return err
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			break
		}
	}
	return nil
}
