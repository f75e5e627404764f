package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bounds on what a bench run may ask for, so a typo cannot allocate the
// machine away.
const (
	maxBenchRecordSize = 64 << 20
	maxBenchProducers  = 1024
	maxBenchPartitions = 100000
)

// produceLoad is the load produce and e2e generate: how big, how many
// producers, how they batch.
type produceLoad struct {
	topic       string
	partitions  int32
	recordSize  int
	producers   int
	acks        string
	batchBytes  int32
	linger      time.Duration
	buffered    int
	inflight    int
	compression string
}

func (l *produceLoad) register(fs *pflag.FlagSet) {
	fs.StringVar(&l.topic, "topic", "spool-bench", "topic to write (created with --partitions if missing)")
	fs.Int32Var(&l.partitions, "partitions", 1, "partitions of the topic when it has to be created")
	fs.IntVar(&l.recordSize, "record-size", 1024, "bytes of each record's value")
	fs.IntVar(&l.producers, "producers", 1, "concurrent producers, each its own client and connection")
	fs.StringVar(&l.acks, "acks", "1", "acks: 0, 1 or all")
	fs.Int32Var(&l.batchBytes, "batch-bytes", 1<<20, "largest record batch a producer builds (ProducerBatchMaxBytes)")
	fs.DurationVar(&l.linger, "linger", 0, "how long a producer waits to fill a batch (ProducerLinger)")
	fs.IntVar(&l.buffered, "buffered", 10000, "records a producer may have outstanding; 1 means one record at a time")
	fs.IntVar(&l.inflight, "max-inflight", 1, "produce requests in flight per producer and broker")
	fs.StringVar(&l.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
}

func (l *produceLoad) validate() error {
	switch {
	case l.topic == "":
		return errors.New("--topic is empty")
	case l.partitions < 1 || l.partitions > maxBenchPartitions:
		return fmt.Errorf("--partitions %d: want 1..%d", l.partitions, maxBenchPartitions)
	case l.recordSize < 0 || l.recordSize > maxBenchRecordSize:
		return fmt.Errorf("--record-size %d: want 0..%d", l.recordSize, maxBenchRecordSize)
	case l.producers < 1 || l.producers > maxBenchProducers:
		return fmt.Errorf("--producers %d: want 1..%d", l.producers, maxBenchProducers)
	case l.batchBytes < 1:
		return fmt.Errorf("--batch-bytes %d: want > 0", l.batchBytes)
	case l.buffered < 1:
		return fmt.Errorf("--buffered %d: want >= 1", l.buffered)
	case l.inflight < 1:
		return fmt.Errorf("--max-inflight %d: want >= 1", l.inflight)
	}
	if _, err := parseAcks(l.acks); err != nil {
		return err
	}
	if _, err := parseCompression(l.compression); err != nil {
		return err
	}
	return nil
}

func parseAcks(s string) (kgo.Acks, error) {
	switch strings.ToLower(s) {
	case "0", "none":
		return kgo.NoAck(), nil
	case "1", "leader":
		return kgo.LeaderAck(), nil
	case "all", "-1":
		return kgo.AllISRAcks(), nil
	}
	return kgo.Acks{}, fmt.Errorf("acks %q: want 0, 1 or all", s)
}

func parseCompression(s string) (kgo.CompressionCodec, error) {
	switch strings.ToLower(s) {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("compression %q: want none, gzip, snappy, lz4 or zstd", s)
}

func (l *produceLoad) settings() map[string]any {
	return map[string]any{
		"topic": l.topic, "partitions": l.partitions, "record_size": l.recordSize,
		"producers": l.producers, "acks": l.acks, "batch_bytes": l.batchBytes,
		"linger": l.linger.String(), "buffered": l.buffered, "max_inflight": l.inflight,
		"compression": l.compression,
	}
}

// producerOpts are the franz-go options one producer client runs with.
func (l *produceLoad) producerOpts(hooks ...kgo.Hook) []kgo.Opt {
	acks, _ := parseAcks(l.acks)
	codec, _ := parseCompression(l.compression)
	opts := []kgo.Opt{
		kgo.DefaultProduceTopic(l.topic),
		kgo.RequiredAcks(acks),
		kgo.ProducerBatchMaxBytes(l.batchBytes),
		kgo.ProducerLinger(l.linger),
		kgo.MaxBufferedRecords(l.buffered),
		kgo.ProducerBatchCompression(codec),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ClientID("spool-bench"),
	}
	if acks != kgo.AllISRAcks() {
		// Idempotence needs acks=all; without it franz-go also allows
		// more than one request in flight.
		opts = append(opts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(l.inflight))
	}
	if len(hooks) > 0 {
		opts = append(opts, kgo.WithHooks(hooks...))
	}
	return opts
}

// ensureTopic creates the topic with --partitions partitions unless it exists.
func ensureTopic(ctx context.Context, g *globals, topic string, partitions int32) error {
	adm, closeAdm, err := g.admin(ctx)
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

// batchStats counts the batches franz-go wrote, so the baseline can be run
// with the same batch size.
type batchStats struct {
	batches, records, bytes atomic.Int64
}

func (b *batchStats) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	b.batches.Add(1)
	b.records.Add(int64(m.NumRecords))
	b.bytes.Add(int64(m.CompressedBytes))
}

func (b *batchStats) extra() map[string]float64 {
	n := b.batches.Load()
	if n == 0 {
		return nil
	}
	return map[string]float64{
		"batches":           float64(n),
		"records_per_batch": float64(b.records.Load()) / float64(n),
		"bytes_per_batch":   float64(b.bytes.Load()) / float64(n),
	}
}

// runProducers drives l.producers clients until ctx ends or limit records
// (0: no limit) have been handed to them, then waits for every outstanding
// record. value makes each record's value (it may return a shared slice:
// franz-go does not modify values). Every acknowledged record is added to m
// with its latency from Produce to acknowledgement.
func runProducers(ctx context.Context, g *globals, l *produceLoad, m *meter, bs *batchStats, limit int64, value func() []byte) error {
	var clients []*kgo.Client
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	for i := 0; i < l.producers; i++ {
		cl, err := g.client(ctx, l.producerOpts(bs)...)
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
				if l.buffered == 1 {
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
		return fmt.Errorf("produce to %s: %w (%d records failed)", l.topic, firstErr, m.errors.Load())
	}
	return nil
}

// randomPayload is size incompressible bytes.
func randomPayload(size int) []byte {
	b := make([]byte, size)
	rand.Read(b)
	return b
}

func newBenchProduceCmd(g *globals) *cobra.Command {
	var (
		common       benchCommon
		load         produceLoad
		raw          bool
		batchRecords int
	)
	cmd := &cobra.Command{
		Use:   "produce",
		Short: "Produce records as fast as the cluster takes them",
		Long: `Produce records of --record-size random bytes from --producers clients until
--duration or --count, and report records/s, MB/s and the latency from
handing a record to the client to its acknowledgement (p50, p99, p99.9).
With --buffered 1 each producer has one record, hence one request, in flight.

With --raw there is no client library: --producers TCP connections each send
one pre-encoded ProduceRequest over and over (connection i to partition i
modulo the partitions), a RecordBatch of --batch-records records, with
--max-inflight requests outstanding, and the latency is each request's round
trip. That is the load shape of 'spool bench baseline' (fixed batches behind
loopback round trips), so the ratio of the two measures the broker and not
the client's own record building.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := common.validate(); err != nil {
				return err
			}
			if err := load.validate(); err != nil {
				return err
			}
			if err := ensureTopic(cmd.Context(), g, load.topic, load.partitions); err != nil {
				return err
			}
			if batchRecords < 0 || encodedBatchBytes(batchRecords, load.recordSize) > rawFrameMax/2 {
				return fmt.Errorf("--batch-records %d: want 0..%d records of this size", batchRecords, (rawFrameMax/2-encodedBatchBytes(0, 0))/int64(load.recordSize+16))
			}
			if raw && batchRecords == 0 {
				// As many as fit in --batch-bytes, at ~10 bytes of record
				// framing each past the 61-byte batch header.
				batchRecords = max(1, (int(load.batchBytes)-61)/(load.recordSize+10))
			}
			payload := randomPayload(load.recordSize)
			m := newMeter("produce")
			var bs batchStats
			ctx, cancel := common.context(cmd.Context())
			defer cancel()
			m.start = time.Now()
			stop := m.progress(cmd.ErrOrStderr(), common.quiet)
			var err error
			if raw {
				err = rawProduce(ctx, g, &load, batchRecords, m, common.count)
			} else {
				err = runProducers(ctx, g, &load, m, &bs, common.count, func() []byte { return payload })
			}
			elapsed := time.Since(m.start)
			stop()
			if err != nil {
				return err
			}
			res := m.result(elapsed, "produce to ack")
			res.Extra = bs.extra()
			if raw {
				if res.Latency != nil {
					res.Latency.What = "produce request round trip"
				}
				res.Extra = map[string]float64{"records_per_batch": float64(batchRecords), "batches": float64(m.records.Load() / int64(batchRecords))}
			}
			rep := benchReport{Command: "produce", Settings: load.settings(), Results: []benchResult{res}}
			rep.Settings["duration"], rep.Settings["count"] = common.duration.String(), common.count
			rep.Settings["raw"] = raw
			if raw {
				rep.Settings["batch_records"] = batchRecords
			}
			return rep.print(cmd.OutOrStdout(), common.output)
		},
	}
	common.register(cmd.Flags(), 10*time.Second)
	load.register(cmd.Flags())
	cmd.Flags().BoolVar(&raw, "raw", false, "send pre-encoded ProduceRequests on plain connections instead of using franz-go (see above)")
	cmd.Flags().IntVar(&batchRecords, "batch-records", 0, "with --raw, records per batch (0: as many as fit in --batch-bytes)")
	return cmd
}
