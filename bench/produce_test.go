package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestProduceCountLandsInTopic(t *testing.T) {
	n := testNode(t)
	rep, err := Produce(testContext(t), ProduceConfig{
		Cluster: Cluster{Brokers: []string{n.KafkaAddr()}},
		Run:     Run{Count: 3000, Duration: 30 * time.Second},
		Load:    load("bp", func(l *ProduceLoad) { l.Partitions, l.Producers, l.RecordSize = 3, 2, 100 }),
	})
	if err != nil {
		t.Fatal(err)
	}
	res := resultNamed(t, rep, "produce")
	if res.Records != 3000 || res.Bytes != 3000*100 || res.Errors != 0 {
		t.Fatalf("produce result %+v, want 3000 records of 100 bytes", res)
	}
	if res.Latency == nil || res.Latency.Samples != 3000 || res.Latency.P50 <= 0 || res.Latency.P99 < res.Latency.P50 {
		t.Fatalf("latency %+v", res.Latency)
	}
	if res.Extra["batches"] < 1 || res.Extra["records_per_batch"] <= 0 {
		t.Fatalf("batch stats %v", res.Extra)
	}
	if rep.Settings["raw"] != false || rep.Settings["count"] != int64(3000) || rep.Settings["producers"] != 2 {
		t.Fatalf("settings %v", rep.Settings)
	}
	// The node holds exactly those records, spread over the 3 partitions.
	if total, parts := records(n, "bp"); parts != 3 || total != 3000 {
		t.Fatalf("node has %d partitions holding %d records of bp, want 3 holding 3000", parts, total)
	}
}

func TestProduceOneAtATime(t *testing.T) {
	n := testNode(t)
	rep, err := Produce(testContext(t), ProduceConfig{
		Cluster: Cluster{Brokers: []string{n.KafkaAddr()}},
		Run:     Run{Count: 200, Duration: 30 * time.Second},
		Load:    load("bp1", func(l *ProduceLoad) { l.Buffered, l.Acks = 1, "all" }),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res := resultNamed(t, rep, "produce"); res.Records != 200 || res.Extra["batches"] != 200 || res.Extra["records_per_batch"] != 1 {
		t.Fatalf("one record at a time gave %+v, want 200 batches of one record", res)
	}
}

// Raw sends whole pre-encoded batches on plain connections; the node stores
// exactly those records, spread over the partitions the connections write
// to, and a raw Consume reads them back.
func TestProduceRaw(t *testing.T) {
	n := testNode(t)
	cluster := Cluster{Brokers: []string{n.KafkaAddr()}}
	rep, err := Produce(testContext(t), ProduceConfig{
		Cluster: cluster,
		Run:     Run{Count: 3000, Duration: 30 * time.Second},
		Load: load("raw", func(l *ProduceLoad) {
			l.Partitions, l.Producers, l.MaxInflight, l.RecordSize = 3, 3, 4, 200
		}),
		Raw: true, BatchRecords: 50,
	})
	if err != nil {
		t.Fatal(err)
	}
	res := resultNamed(t, rep, "produce")
	if res.Records != 3000 || res.Bytes != 3000*200 || res.Errors != 0 {
		t.Fatalf("raw produce result %+v, want 3000 records of 200 bytes", res)
	}
	if res.Latency == nil || res.Latency.Samples != 60 || res.Extra["records_per_batch"] != 50 {
		t.Fatalf("raw produce: latency %+v, extra %v; want 60 round trips of 50-record batches", res.Latency, res.Extra)
	}
	st := n.Stats()
	if st.RecordsIn != 3000 || st.BatchesIn != 60 {
		t.Fatalf("node took %d records in %d batches, want 3000 in 60", st.RecordsIn, st.BatchesIn)
	}
	for _, p := range st.PartitionStats {
		if n := p.EndOffset - p.StartOffset; p.Topic == "raw" && n%50 != 0 {
			t.Fatalf("partition %d holds %d records, not whole batches of 50", p.Partition, n)
		}
	}
	if total, _ := records(n, "raw"); total != 3000 {
		t.Fatalf("topic raw holds %d records, want 3000", total)
	}

	fetch := DefaultFetchLoad()
	fetch.PartitionMaxBytes = 16384
	rep, err = Consume(testContext(t), ConsumeConfig{Cluster: cluster, Load: load("raw", nil), Fetch: fetch, Raw: true})
	if err != nil {
		t.Fatal(err)
	}
	res = resultNamed(t, rep, "consume")
	if res.Records != 3000 || res.Errors != 0 || res.Bytes < 3000*200 || res.Latency == nil || res.Latency.Samples < 2 {
		t.Fatalf("raw consume result %+v, want the 3000 records in several fetches", res)
	}
}

func TestProduceRawRefusesAcksZero(t *testing.T) {
	n := testNode(t)
	_, err := Produce(testContext(t), ProduceConfig{
		Cluster: Cluster{Brokers: []string{n.KafkaAddr()}},
		Run:     Run{Count: 10},
		Load:    load("raw0", func(l *ProduceLoad) { l.Acks = "0" }),
		Raw:     true,
	})
	if err == nil || !strings.Contains(err.Error(), "acks") {
		t.Fatalf("raw produce with acks=0: %v", err)
	}
}

// Bad loads are refused before anything is dialed: nothing listens at the
// address given.
func TestProduceRejectsBadLoads(t *testing.T) {
	nowhere := Cluster{Brokers: []string{"127.0.0.1:1"}}
	for name, change := range map[string]func(*ProduceConfig){
		"acks":          func(c *ProduceConfig) { c.Load.Acks = "2" },
		"record-size":   func(c *ProduceConfig) { c.Load.RecordSize = -1 },
		"producers":     func(c *ProduceConfig) { c.Load.Producers = 0 },
		"compression":   func(c *ProduceConfig) { c.Load.Compression = "brotli" },
		"duration":      func(c *ProduceConfig) { c.Run.Duration, c.Run.Count = 0, 0 },
		"batch-records": func(c *ProduceConfig) { c.BatchRecords = -1 },
	} {
		cfg := ProduceConfig{Cluster: nowhere, Run: Run{Duration: time.Second}, Load: DefaultProduceLoad()}
		change(&cfg)
		if _, err := Produce(testContext(t), cfg); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want an error about it", name, err)
		}
	}
	cfg := EndToEndConfig{Cluster: nowhere, Run: Run{Duration: time.Second}, Load: DefaultProduceLoad(), Fetch: DefaultFetchLoad()}
	cfg.Load.RecordSize = 4
	if _, err := EndToEnd(testContext(t), cfg); err == nil || !strings.Contains(err.Error(), "send time") {
		t.Errorf("e2e of 4-byte records: %v, want the room for the send time", err)
	}
}

// TestBatchStatsSettle: franz-go counts a batch from a goroutine of its own,
// which may run after the batch's records were acknowledged; settle waits
// for that count, so a report read after the last acknowledgement holds
// every batch.
func TestBatchStatsSettle(t *testing.T) {
	var bs batchStats
	bs.OnProduceBatchWritten(kgo.BrokerMetadata{}, "t", 0, kgo.ProduceBatchMetrics{NumRecords: 1, CompressedBytes: 10})
	late := make(chan struct{})
	go func() {
		<-late
		bs.OnProduceBatchWritten(kgo.BrokerMetadata{}, "t", 0, kgo.ProduceBatchMetrics{NumRecords: 1, CompressedBytes: 10})
	}()
	settled := make(chan struct{})
	go func() {
		bs.settle(testContext(t), 2)
		close(settled)
	}()
	select {
	case <-settled:
		t.Fatal("settle returned before the second batch was counted")
	case <-time.After(50 * time.Millisecond):
	}
	close(late)
	<-settled
	if x := bs.extra(); x["batches"] != 2 || x["records_per_batch"] != 1 || x["bytes_per_batch"] != 10 {
		t.Fatalf("extra %v, want 2 batches of one record and 10 bytes", x)
	}
}
