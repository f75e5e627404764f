package main

import (
	"strings"
	"testing"
)

func TestBenchProduceCountLandsInTopic(t *testing.T) {
	n := testNode(t)
	rep := runBenchJSON(t, "bench", "produce", "--brokers", n.KafkaAddr(),
		"--topic", "bp", "--partitions", "3", "--producers", "2", "--record-size", "100",
		"--count", "3000", "--duration", "30s")
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
	// The node holds exactly those records, spread over the 3 partitions.
	st := n.Stats()
	var total int64
	parts := 0
	for _, p := range st.PartitionStats {
		if p.Topic == "bp" {
			parts++
			total += p.EndOffset - p.StartOffset
		}
	}
	if parts != 3 || total != 3000 {
		t.Fatalf("node has %d partitions holding %d records of bp, want 3 holding 3000", parts, total)
	}
}

func TestBenchProduceOneAtATime(t *testing.T) {
	n := testNode(t)
	rep := runBenchJSON(t, "bench", "produce", "--brokers", n.KafkaAddr(),
		"--topic", "bp1", "--buffered", "1", "--count", "200", "--acks", "all")
	res := resultNamed(t, rep, "produce")
	if res.Records != 200 || res.Extra["records_per_batch"] != 1 {
		t.Fatalf("one record at a time gave %+v, want 200 batches of one record", res)
	}
}

// TestBenchProduceRaw: --raw sends whole pre-encoded batches on plain
// connections; the node stores exactly those records, spread over the
// partitions the connections write to, and --raw consume reads them back.
func TestBenchProduceRaw(t *testing.T) {
	n := testNode(t)
	rep := runBenchJSON(t, "bench", "produce", "--raw", "--brokers", n.KafkaAddr(),
		"--topic", "raw", "--partitions", "3", "--producers", "3", "--max-inflight", "4",
		"--record-size", "200", "--batch-records", "50", "--count", "3000", "--duration", "30s")
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
	var total int64
	for _, p := range st.PartitionStats {
		if p.Topic != "raw" {
			continue
		}
		if n := p.EndOffset - p.StartOffset; n%50 != 0 {
			t.Fatalf("partition %d holds %d records, not whole batches of 50", p.Partition, n)
		}
		total += p.EndOffset - p.StartOffset
	}
	if total != 3000 {
		t.Fatalf("topic raw holds %d records, want 3000", total)
	}

	rep = runBenchJSON(t, "bench", "consume", "--raw", "--brokers", n.KafkaAddr(), "--topic", "raw",
		"--partition-max-bytes", "16384")
	res = resultNamed(t, rep, "consume")
	if res.Records != 3000 || res.Errors != 0 || res.Bytes < 3000*200 || res.Latency == nil || res.Latency.Samples < 2 {
		t.Fatalf("raw consume result %+v, want the 3000 records in several fetches", res)
	}
}

func TestBenchProduceRawRefusesAcksZero(t *testing.T) {
	n := testNode(t)
	_, _, err := runCLI(t, "", "bench", "produce", "--raw", "--acks", "0", "--brokers", n.KafkaAddr(),
		"--topic", "raw0", "--count", "10", "-q")
	if err == nil || !strings.Contains(err.Error(), "acks") {
		t.Fatalf("raw produce with acks=0: %v", err)
	}
}
