package client

import (
	"crypto/rand"
	"encoding/hex"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/node"
)

// TestProduceReportsPerPartition: unkeyed lines go round-robin, and the
// result counts what each partition took.
func TestProduceReportsPerPartition(t *testing.T) {
	g, _ := testCluster(t)
	mustCreate(t, g, "spread", 2)
	res, err := g.Produce(testContext(t), ProduceOptions{Topic: "spread", Partition: -1, Input: strings.NewReader("a\nb\nc\nd\ne\nf\n")})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(res.Acked, map[int32]int{0: 3, 1: 3}) || res.Total != 6 || len(res.Failed) != 0 || res.Unanswered() != 0 {
		t.Errorf("result: %+v", res)
	}
	if got := res.String(); got != "6 records to spread (partition 0: 3, partition 1: 3)" {
		t.Errorf("report: %q", got)
	}
	res, err = g.Produce(testContext(t), ProduceOptions{Topic: "spread", Partition: 1, KeySeparator: "=", Input: strings.NewReader("k=v\n")})
	if err != nil || !maps.Equal(res.Acked, map[int32]int{1: 1}) {
		t.Errorf("to partition 1: %v %+v", err, res)
	}
	if _, err := g.Produce(testContext(t), ProduceOptions{Topic: "spread", Partition: 2, Input: strings.NewReader("x\n")}); err == nil || !strings.Contains(err.Error(), "topic spread has 2 partitions (0..1)") {
		t.Errorf("to partition 2 of 2: %v", err)
	}
}

// TestProduceRefusals: a missing topic, a record above the topic's limit
// (ours or the broker's), and a line longer than a record may be.
func TestProduceRefusals(t *testing.T) {
	g, _ := testCluster(t, func(c *node.Config) { c.AutoCreateTopics = true })
	for _, in := range []string{"hello\n", ""} {
		if _, err := g.Produce(testContext(t), ProduceOptions{Topic: "missing", Partition: -1, Input: strings.NewReader(in)}); err == nil || !strings.Contains(err.Error(), "spool topic create missing") {
			t.Errorf("produce %q to a missing topic: %v", in, err)
		}
	}
	mustCreate(t, g, "small", 1, "max.message.bytes=2000")
	produce := func(in string, maxBytes int32) (ProduceResult, error) {
		return g.Produce(testContext(t), ProduceOptions{Topic: "small", Partition: -1, MaxRecordBytes: maxBytes, Input: strings.NewReader(in)})
	}
	res, err := produce("ok\n"+strings.Repeat("x", 3000)+"\n", 0)
	want := ProduceFailure{Partition: 0, Records: 1, Reason: "record too large: the limit is 2000 bytes (topic small max.message.bytes; --max-record-bytes to change)"}
	if err == nil || res.Written() != 1 || len(res.Failed) != 1 || res.Failed[0] != want || !strings.Contains(err.Error(), "1 of 2 records written") {
		t.Errorf("a record above max.message.bytes: %v %+v", err, res)
	}
	// Above the topic's limit by the option, the broker refuses, and says so.
	random := make([]byte, 3000)
	rand.Read(random)
	res, err = produce(hex.EncodeToString(random)+"\n", 10000)
	if err == nil || len(res.Failed) != 1 || res.Failed[0].Reason != "record too large for the broker: above the topic's max.message.bytes" {
		t.Errorf("MaxRecordBytes above the topic's limit: the broker should refuse: %v %+v", err, res)
	}
	// A line beyond what produce reads as one record stops the input there;
	// what came before is written, and said so.
	res, err = produce("before\n"+strings.Repeat("y", MaxLineBytes+1)+"\nafter\n", 0)
	if err == nil || res.Written() != 1 || !strings.Contains(err.Error(), "a line is longer than") || !strings.Contains(err.Error(), "stopped there: 1 record to small (partition 0: 1)") {
		t.Errorf("an over-long line: %v %+v", err, res)
	}
}

// TestProduceResultString: what was not written is said per partition and
// reason, and what got no answer is counted apart.
func TestProduceResultString(t *testing.T) {
	res := ProduceResult{Topic: "t", Total: 7, Acked: map[int32]int{2: 2, 0: 1}, Timeout: 5 * time.Second,
		Failed: []ProduceFailure{{Partition: -1, Records: 1, Reason: "unknown topic or partition"}, {Partition: 1, Records: 2, Reason: "no leader"}}}
	want := "3 of 7 records written (partition 0: 1, partition 2: 2); not written: no partition chosen: 1, unknown topic or partition; " +
		"partition 1: 2, no leader; 1 without an answer within --timeout 5s (may or may not be written)"
	if got := res.String(); got != want {
		t.Errorf("report:\n got %q\nwant %q", got, want)
	}
}
