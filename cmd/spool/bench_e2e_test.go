package main

import "testing"

func TestBenchE2EConsumesEveryProducedRecord(t *testing.T) {
	n := testNode(t)
	// Records already in the topic are not part of the run.
	runBenchJSON(t, "bench", "produce", "--brokers", n.KafkaAddr(), "--topic", "be", "--count", "500")
	rep := runBenchJSON(t, "bench", "e2e", "--brokers", n.KafkaAddr(),
		"--topic", "be", "--record-size", "64", "--count", "2000", "--producers", "2")
	res := resultNamed(t, rep, "e2e")
	if res.Records != 2000 || res.Extra["produced"] != 2000 || res.Errors != 0 {
		t.Fatalf("e2e result %+v, want 2000 produced and consumed", res)
	}
	if res.Latency == nil || res.Latency.Samples != 2000 || res.Latency.P50 <= 0 {
		t.Fatalf("e2e latency %+v", res.Latency)
	}
}
