package main

import (
	"strings"
	"testing"
)

func TestBenchConsumeReadsWhatIsThere(t *testing.T) {
	n := testNode(t)
	rep := runBenchJSON(t, "bench", "consume", "--brokers", n.KafkaAddr(),
		"--topic", "bc", "--partitions", "2", "--record-size", "512", "--fill", "4000")
	res := resultNamed(t, rep, "consume")
	if res.Records != 4000 || res.Bytes != 4000*512 || res.Errors != 0 {
		t.Fatalf("consume result %+v, want the 4000 filled records of 512 bytes", res)
	}
	if res.Latency == nil || res.Latency.Samples < 1 {
		t.Fatalf("no fetch round trips recorded: %+v", res.Latency)
	}
	// A second fill to the same size adds nothing.
	rep = runBenchJSON(t, "bench", "consume", "--brokers", n.KafkaAddr(),
		"--topic", "bc", "--fill", "4000", "--count", "100")
	if res := resultNamed(t, rep, "consume"); res.Records < 100 {
		t.Fatalf("--count 100 read %d", res.Records)
	}
	if st := n.Stats(); st.RecordsIn != 4000 {
		t.Fatalf("node took %d records, want 4000 (second --fill must not add)", st.RecordsIn)
	}
}

func TestBenchConsumeEmptyTopicIsAnError(t *testing.T) {
	n := testNode(t)
	if _, _, err := runCLI(t, "", "topic", "create", "empty", "-p", "1", "--brokers", n.KafkaAddr()); err != nil {
		t.Fatal(err)
	}
	_, _, err := runCLI(t, "", "bench", "consume", "--brokers", n.KafkaAddr(), "--topic", "empty", "-q")
	if err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("consume of an empty topic: %v", err)
	}
}
