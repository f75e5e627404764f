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

// Asked for more than is there, consume reads the topic again from its
// start, with franz-go and raw alike, as the copy baseline sends its file
// over and over.
func TestBenchConsumeReadsInPasses(t *testing.T) {
	n := testNode(t)
	runBenchJSON(t, "bench", "consume", "--brokers", n.KafkaAddr(),
		"--topic", "passes", "--partitions", "2", "--record-size", "100", "--fill", "1000")
	for _, mode := range [][]string{nil, {"--raw"}} {
		rep := runBenchJSON(t, append([]string{"bench", "consume", "--brokers", n.KafkaAddr(),
			"--topic", "passes", "--count", "3500", "--duration", "30s"}, mode...)...)
		// Raw counts record batch bytes, headers included.
		if res := resultNamed(t, rep, "consume"); res.Records < 3500 || res.Bytes < res.Records*100 || res.Errors != 0 {
			t.Fatalf("consume %v --count 3500 of 1000 records: %+v, want at least 3500 read in passes", mode, res)
		}
		rep = runBenchJSON(t, append([]string{"bench", "consume", "--brokers", n.KafkaAddr(),
			"--topic", "passes", "--duration", "1s"}, mode...)...)
		if res := resultNamed(t, rep, "consume"); res.Records <= 1000 {
			t.Fatalf("consume %v --duration 1s of 1000 records: %d read, want more than one pass", mode, res.Records)
		}
	}
}
