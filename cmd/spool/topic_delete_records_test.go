package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestTopicDeleteRecords(t *testing.T) {
	n := testNode(t)
	b := []string{"--brokers", n.KafkaAddr()}
	if _, _, err := runCLI(t, "", append([]string{"topic", "create", "dr", "--partitions", "1"}, b...)...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.DefaultProduceTopic("dr"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 10 { // one batch per record, so the cut falls between batches
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := runCLI(t, "", append([]string{"topic", "delete-records", "dr", "--partition", "0", "--before", "4"}, b...)...)
	if err != nil || !strings.Contains(out, "dr/0 now starts at offset 4") {
		t.Fatalf("delete-records: %q, %v", out, err)
	}
	adm := adminClient(t, n.KafkaAddr())
	starts, err := adm.ListStartOffsets(ctx, "dr")
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := starts.Lookup("dr", 0); s.Offset != 4 {
		t.Fatalf("start offset %d after --before 4", s.Offset)
	}
	out, _, err = runCLI(t, "", append([]string{"topic", "delete-records", "dr", "--partition", "0", "--before", "-1"}, b...)...)
	if err != nil || !strings.Contains(out, "starts at offset 10") {
		t.Fatalf("delete-records --before -1: %q, %v", out, err)
	}
	_, _, err = runCLI(t, "", append([]string{"topic", "delete-records", "dr", "--partition", "0", "--before", "11"}, b...)...)
	if err == nil || !strings.Contains(err.Error(), "OFFSET_OUT_OF_RANGE") {
		t.Fatalf("past the high watermark: %v, want OFFSET_OUT_OF_RANGE", err)
	}
	_, _, err = runCLI(t, "", append([]string{"topic", "delete-records", "dr", "--partition", "7", "--before", "1"}, b...)...)
	if err == nil || !strings.Contains(err.Error(), "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Fatalf("unknown partition: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
}
