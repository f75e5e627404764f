package bench

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Bounds on what a bench run may ask for, so a typo cannot allocate the
// machine away.
const (
	maxRecordSize = 64 << 20
	maxProducers  = 1024
	maxPartitions = 100000
)

// ProduceLoad is the load Produce and EndToEnd generate (and Consume's Fill):
// how big, how many producers, how they batch.
type ProduceLoad struct {
	// Topic is written, created with Partitions partitions if missing.
	Topic      string
	Partitions int32
	// RecordSize is the bytes of each record's value.
	RecordSize int
	// Producers are concurrent clients, each with its own connection.
	Producers int
	// Acks is 0, 1 or all.
	Acks string
	// BatchBytes is the largest batch a producer builds
	// (ProducerBatchMaxBytes).
	BatchBytes int32
	// Linger is how long a producer waits to fill a batch.
	Linger time.Duration
	// Buffered is the records a producer may have outstanding; 1 means one
	// record, hence one request, at a time.
	Buffered int
	// MaxInflight is the produce requests in flight per producer and
	// broker.
	MaxInflight int
	// Compression is none, gzip, snappy, lz4 or zstd.
	Compression string
	// NoIdempotence, with Acks all, produces without idempotence (no
	// producer id, no sequence numbers) and MaxInflight requests in
	// flight: the same load less what idempotence costs the broker. Acks
	// 0 and 1 never use idempotence.
	NoIdempotence bool
}

// DefaultProduceLoad is the load `spool bench` runs with no flags.
func DefaultProduceLoad() ProduceLoad {
	return ProduceLoad{
		Topic: "spool-bench", Partitions: 1, RecordSize: 1024, Producers: 1, Acks: "1",
		BatchBytes: 1 << 20, Buffered: 10000, MaxInflight: 1, Compression: "none",
	}
}

func (l *ProduceLoad) validate() error {
	switch {
	case l.Topic == "":
		return errors.New("--topic is empty")
	case l.Partitions < 1 || l.Partitions > maxPartitions:
		return fmt.Errorf("--partitions %d: want 1..%d", l.Partitions, maxPartitions)
	case l.RecordSize < 0 || l.RecordSize > maxRecordSize:
		return fmt.Errorf("--record-size %d: want 0..%d", l.RecordSize, maxRecordSize)
	case l.Producers < 1 || l.Producers > maxProducers:
		return fmt.Errorf("--producers %d: want 1..%d", l.Producers, maxProducers)
	case l.BatchBytes < 1:
		return fmt.Errorf("--batch-bytes %d: want > 0", l.BatchBytes)
	case l.Buffered < 1:
		return fmt.Errorf("--buffered %d: want >= 1", l.Buffered)
	case l.MaxInflight < 1:
		return fmt.Errorf("--max-inflight %d: want >= 1", l.MaxInflight)
	}
	if _, err := parseAcks(l.Acks); err != nil {
		return err
	}
	if _, err := parseCompression(l.Compression); err != nil {
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

func (l *ProduceLoad) settings() map[string]any {
	return map[string]any{
		"topic": l.Topic, "partitions": l.Partitions, "record_size": l.RecordSize,
		"producers": l.Producers, "acks": l.Acks, "batch_bytes": l.BatchBytes,
		"linger": l.Linger.String(), "buffered": l.Buffered, "max_inflight": l.MaxInflight,
		"compression": l.Compression,
	}
}

// producerOpts are the franz-go options one producer client runs with.
func (l *ProduceLoad) producerOpts(hooks ...kgo.Hook) []kgo.Opt {
	acks, _ := parseAcks(l.Acks)
	codec, _ := parseCompression(l.Compression)
	opts := []kgo.Opt{
		kgo.DefaultProduceTopic(l.Topic),
		kgo.RequiredAcks(acks),
		kgo.ProducerBatchMaxBytes(l.BatchBytes),
		kgo.ProducerLinger(l.Linger),
		kgo.MaxBufferedRecords(l.Buffered),
		kgo.ProducerBatchCompression(codec),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ClientID("spool-bench"),
	}
	if acks != kgo.AllISRAcks() || l.NoIdempotence {
		// Idempotence needs acks=all; without it franz-go also allows
		// more than one request in flight.
		opts = append(opts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(l.MaxInflight))
	}
	if len(hooks) > 0 {
		opts = append(opts, kgo.WithHooks(hooks...))
	}
	return opts
}

// FetchLoad is how Consume and EndToEnd fetch.
type FetchLoad struct {
	// FetchMaxBytes is the most bytes one Fetch response may carry.
	FetchMaxBytes int32
	// PartitionMaxBytes is the most bytes per partition in one Fetch.
	PartitionMaxBytes int32
	// MaxWait is how long a Fetch waits for data.
	MaxWait time.Duration
}

// DefaultFetchLoad is how `spool bench consume` fetches with no flags
// (e2e waits 10ms instead).
func DefaultFetchLoad() FetchLoad {
	return FetchLoad{FetchMaxBytes: 50 << 20, PartitionMaxBytes: 1 << 20, MaxWait: 500 * time.Millisecond}
}

func (f *FetchLoad) validate() error {
	if f.FetchMaxBytes < 1 || f.PartitionMaxBytes < 1 {
		return errors.New("--fetch-max-bytes and --partition-max-bytes must be positive")
	}
	if f.MaxWait < 0 {
		return errors.New("--max-wait must not be negative")
	}
	return nil
}

func (f *FetchLoad) opts() []kgo.Opt {
	return []kgo.Opt{
		kgo.FetchMaxBytes(f.FetchMaxBytes),
		kgo.FetchMaxPartitionBytes(f.PartitionMaxBytes),
		kgo.FetchMaxWait(f.MaxWait),
	}
}

// randomPayload is size incompressible bytes.
func randomPayload(size int) []byte {
	b := make([]byte, size)
	rand.Read(b)
	return b
}
