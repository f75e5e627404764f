package main

import (
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
