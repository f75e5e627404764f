package bench

import (
	"strings"
	"testing"
	"time"
)

func TestConsumeReadsWhatIsThere(t *testing.T) {
	n := testNode(t)
	cluster := Cluster{Brokers: []string{n.KafkaAddr()}}
	rep, err := Consume(testContext(t), ConsumeConfig{
		Cluster: cluster, Fetch: DefaultFetchLoad(), Fill: 4000,
		Load: load("bc", func(l *ProduceLoad) { l.Partitions, l.RecordSize = 2, 512 }),
	})
	if err != nil {
		t.Fatal(err)
	}
	res := resultNamed(t, rep, "consume")
	if res.Records != 4000 || res.Bytes != 4000*512 || res.Errors != 0 {
		t.Fatalf("consume result %+v, want the 4000 filled records of 512 bytes", res)
	}
	if res.Latency == nil || res.Latency.Samples < 1 {
		t.Fatalf("no fetch round trips recorded: %+v", res.Latency)
	}
	if rep.Settings["records_present"] != int64(4000) {
		t.Fatalf("settings %v, want 4000 records present", rep.Settings)
	}
	// A second fill to the same size adds nothing.
	rep, err = Consume(testContext(t), ConsumeConfig{
		Cluster: cluster, Fetch: DefaultFetchLoad(), Fill: 4000, Run: Run{Count: 100}, Load: load("bc", nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res := resultNamed(t, rep, "consume"); res.Records < 100 {
		t.Fatalf("Count 100 read %d", res.Records)
	}
	if st := n.Stats(); st.RecordsIn != 4000 {
		t.Fatalf("node took %d records, want 4000 (second fill must not add)", st.RecordsIn)
	}
}

func TestConsumeEmptyTopicIsAnError(t *testing.T) {
	n := testNode(t)
	cluster := Cluster{Brokers: []string{n.KafkaAddr()}}
	if err := ensureTopic(testContext(t), cluster, "empty", 1); err != nil {
		t.Fatal(err)
	}
	_, err := Consume(testContext(t), ConsumeConfig{Cluster: cluster, Fetch: DefaultFetchLoad(), Load: load("empty", nil)})
	if err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("consume of an empty topic: %v", err)
	}
}

// Asked for more than is there, Consume reads the topic again from its
// start, with franz-go and raw alike, as the copy baseline sends its file
// over and over.
func TestConsumeReadsInPasses(t *testing.T) {
	n := testNode(t)
	cluster := Cluster{Brokers: []string{n.KafkaAddr()}}
	l := load("passes", func(l *ProduceLoad) { l.Partitions, l.RecordSize = 2, 100 })
	if err := fillTopic(testContext(t), cluster, &l, 1000); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []bool{false, true} {
		cfg := ConsumeConfig{Cluster: cluster, Fetch: DefaultFetchLoad(), Load: l, Raw: raw,
			Run: Run{Count: 3500, Duration: 30 * time.Second}}
		rep, err := Consume(testContext(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		// Raw counts record batch bytes, headers included.
		if res := resultNamed(t, rep, "consume"); res.Records < 3500 || res.Bytes < res.Records*100 || res.Errors != 0 {
			t.Fatalf("consume (raw %v) of 3500 of 1000 records: %+v, want at least 3500 read in passes", raw, res)
		}
		cfg.Run = Run{Duration: time.Second}
		if rep, err = Consume(testContext(t), cfg); err != nil {
			t.Fatal(err)
		}
		if res := resultNamed(t, rep, "consume"); res.Records <= 1000 {
			t.Fatalf("consume (raw %v) for 1s of 1000 records: %d read, want more than one pass", raw, res.Records)
		}
	}
}
