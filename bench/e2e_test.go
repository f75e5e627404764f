package bench

import (
	"testing"
	"time"
)

func TestEndToEndConsumesEveryProducedRecord(t *testing.T) {
	n := testNode(t)
	cluster := Cluster{Brokers: []string{n.KafkaAddr()}}
	// Records already in the topic are not part of the run.
	l := load("be", func(l *ProduceLoad) { l.RecordSize, l.Producers = 64, 2 })
	if err := fillTopic(testContext(t), cluster, &l, 500); err != nil {
		t.Fatal(err)
	}
	fetch := DefaultFetchLoad()
	fetch.MaxWait = 10 * time.Millisecond
	rep, err := EndToEnd(testContext(t), EndToEndConfig{
		Cluster: cluster, Load: l, Fetch: fetch, Drain: 10 * time.Second,
		Run: Run{Count: 2000, Duration: 30 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	res := resultNamed(t, rep, "e2e")
	if res.Records != 2000 || res.Extra["produced"] != 2000 || res.Errors != 0 {
		t.Fatalf("e2e result %+v, want 2000 produced and consumed", res)
	}
	if res.Latency == nil || res.Latency.Samples != 2000 || res.Latency.P50 <= 0 {
		t.Fatalf("e2e latency %+v", res.Latency)
	}
}
