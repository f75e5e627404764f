package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/recordbatch"
)

// ProduceConfig is a produce run.
type ProduceConfig struct {
	Cluster Cluster
	Run     Run
	Load    ProduceLoad
	// Raw drops the client library: Load.Producers TCP connections each
	// send one pre-encoded ProduceRequest over and over (connection i to
	// partition i modulo the partitions), a record batch of BatchRecords
	// records, with Load.MaxInflight requests outstanding, and the latency
	// is each request's round trip. That is the load shape of Baseline
	// (fixed batches behind loopback round trips), so the ratio of the two
	// measures the broker and not the client's own record building.
	Raw bool
	// BatchRecords is, with Raw, the records per batch (0: as many as fit
	// in Load.BatchBytes).
	BatchRecords int
}

// Produce produces records of Load.RecordSize random bytes until the run
// ends, and reports records/s, MB/s and the latency from handing a record
// to the client to its acknowledgement (with Raw: each request's round
// trip).
func Produce(ctx context.Context, cfg ProduceConfig) (Report, error) {
	l, batchRecords := &cfg.Load, cfg.BatchRecords
	if err := cfg.Run.validate(true); err != nil {
		return Report{}, err
	}
	if err := l.validate(); err != nil {
		return Report{}, err
	}
	if batchRecords < 0 || encodedBatchBytes(batchRecords, l.RecordSize) > rawFrameMax/2 {
		return Report{}, fmt.Errorf("--batch-records %d: want 0..%d records of this size", batchRecords, (rawFrameMax/2-encodedBatchBytes(0, 0))/int64(l.RecordSize+16))
	}
	if err := ensureTopic(ctx, cfg.Cluster, l.Topic, l.Partitions); err != nil {
		return Report{}, err
	}
	if cfg.Raw && batchRecords == 0 {
		// As many as fit in BatchBytes, at ~10 bytes of record framing
		// each past the batch header.
		batchRecords = max(1, (int(l.BatchBytes)-recordbatch.HeaderSize)/(l.RecordSize+10))
	}
	payload := randomPayload(l.RecordSize)
	m := newMeter("produce")
	var bs batchStats
	elapsed, err := m.measure(ctx, &cfg.Run, func(ctx context.Context) error {
		if cfg.Raw {
			return rawProduce(ctx, cfg.Cluster, l, batchRecords, m, cfg.Run.Count)
		}
		return runProducers(ctx, cfg.Cluster, l, m, &bs, cfg.Run.Count, func() []byte { return payload })
	})
	if err != nil {
		return Report{}, err
	}
	res := m.result(elapsed, "produce to ack")
	if !cfg.Raw {
		bs.settle(ctx, res.Records)
	}
	res.Extra = bs.extra()
	if cfg.Raw {
		if res.Latency != nil {
			res.Latency.What = "produce request round trip"
		}
		res.Extra = map[string]float64{"records_per_batch": float64(batchRecords), "batches": float64(m.records.Load() / int64(batchRecords))}
	}
	rep := Report{Command: "produce", Settings: l.settings(), Results: []Result{res}}
	rep.Settings["duration"], rep.Settings["count"] = cfg.Run.Duration.String(), cfg.Run.Count
	rep.Settings["raw"] = cfg.Raw
	if cfg.Raw {
		rep.Settings["batch_records"] = batchRecords
	}
	return rep, nil
}

// batchStats counts the batches franz-go wrote, so the baseline can be run
// with the same batch size.
//
// franz-go calls OnProduceBatchWritten once per batch it wrote successfully
// (a batch that failed and was sent again is counted once, when it
// succeeds), but from a goroutine of its own started after the batch's
// records were finished: when the last acknowledgement ends a run, the hook
// may not have counted the last batches yet. settle waits until it has
// counted every acknowledged record, so the counts a report reads are
// complete.
type batchStats struct {
	mu                      sync.Mutex
	batches, records, bytes int64
	counted                 chan struct{} // closed by the next count; made by settle
}

func (b *batchStats) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.batches++
	b.records += int64(m.NumRecords)
	b.bytes += int64(m.CompressedBytes)
	if b.counted != nil {
		close(b.counted)
		b.counted = nil
	}
}

// settleWait bounds settle: the hook runs moments after the records it
// counts were acknowledged, so a count still short after this is a count
// that will not come (and the report says what was counted).
const settleWait = 10 * time.Second

// settle waits until the hook has counted at least records records (those
// acknowledged), ctx ends or settleWait passes.
func (b *batchStats) settle(ctx context.Context, records int64) {
	timer := time.NewTimer(settleWait)
	defer timer.Stop()
	for {
		b.mu.Lock()
		if b.records >= records {
			b.mu.Unlock()
			return
		}
		if b.counted == nil {
			b.counted = make(chan struct{})
		}
		counted := b.counted
		b.mu.Unlock()
		select {
		case <-counted:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (b *batchStats) extra() map[string]float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.batches == 0 {
		return nil
	}
	return map[string]float64{
		"batches":           float64(b.batches),
		"records_per_batch": float64(b.records) / float64(b.batches),
		"bytes_per_batch":   float64(b.bytes) / float64(b.batches),
	}
}

// runProducers drives l.Producers clients until ctx ends or limit records
// (0: no limit) have been handed to them, then waits for every outstanding
// record. value makes each record's value (it may return a shared slice:
// franz-go does not modify values). Every acknowledged record is added to m
// with its latency from Produce to acknowledgement.
func runProducers(ctx context.Context, c Cluster, l *ProduceLoad, m *meter, bs *batchStats, limit int64, value func() []byte) error {
	var clients []*kgo.Client
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	for i := 0; i < l.Producers; i++ {
		cl, err := c.client(ctx, l.producerOpts(bs)...)
		if err != nil {
			return err
		}
		clients = append(clients, cl)
	}

	var (
		issued   atomic.Int64
		errMu    sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	// acked records one record's outcome; its latency runs from start,
	// not from the record's timestamp, which franz-go truncates to the
	// millisecond.
	acked := func(start time.Time, r *kgo.Record, err error) {
		if err != nil {
			// Records still buffered when the run ends fail with its
			// context: they were never sent, so they are not errors.
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				m.errors.Add(1)
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
			}
			return
		}
		m.latency.record(time.Since(start))
		m.add(1, int64(len(r.Value)+len(r.Key)))
	}
	for _, cl := range clients {
		wg.Add(1)
		go func(cl *kgo.Client) {
			defer wg.Done()
			for ctx.Err() == nil {
				if limit > 0 && issued.Add(1) > limit {
					break
				}
				start := time.Now()
				r := &kgo.Record{Value: value(), Timestamp: start}
				if l.Buffered == 1 {
					// One record at a time: Produce would block until
					// the previous one is acknowledged, after start
					// was taken, and count that wait too.
					acked(start, r, cl.ProduceSync(ctx, r).FirstErr())
					continue
				}
				cl.Produce(ctx, r, func(r *kgo.Record, err error) { acked(start, r, err) })
			}
			// Records still buffered when the run's context ended fail
			// with that context; let those that were sent finish.
			fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cl.Flush(fctx)
		}(cl)
	}
	wg.Wait()
	errMu.Lock()
	defer errMu.Unlock()
	if firstErr != nil {
		return fmt.Errorf("produce to %s: %w (%d records failed)", l.Topic, firstErr, m.errors.Load())
	}
	return nil
}
