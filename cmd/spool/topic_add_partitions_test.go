package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestTopicAddPartitions(t *testing.T) {
	n := testNode(t)
	b := []string{"--brokers", n.KafkaAddr()}
	if _, _, err := runCLI(t, "", append([]string{"topic", "create", "grow", "--partitions", "2"}, b...)...); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(t, "", append([]string{"topic", "add-partitions", "grow", "--total", "5"}, b...)...)
	if err != nil || !strings.Contains(out, "grow now has 5 partitions") {
		t.Fatalf("add-partitions: %q, %v", out, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := adminClient(t, n.KafkaAddr())
	topics, err := adm.ListTopics(ctx, "grow")
	if err != nil || len(topics["grow"].Partitions) != 5 {
		t.Fatalf("grow has %d partitions after --total 5 (%v)", len(topics["grow"].Partitions), err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "grow", Partition: 4, Value: []byte("new")}).FirstErr(); err != nil {
		t.Fatalf("produce to new partition 4: %v", err)
	}

	_, _, err = runCLI(t, "", append([]string{"topic", "add-partitions", "grow", "--total", "3"}, b...)...)
	if err == nil || !strings.Contains(err.Error(), "INVALID_PARTITIONS") {
		t.Fatalf("shrinking to 3: %v, want INVALID_PARTITIONS", err)
	}
	out, _, err = runCLI(t, "", append([]string{"topic", "add-partitions", "grow", "--total", "9", "--validate-only"}, b...)...)
	if err != nil || !strings.Contains(out, "can have 9") {
		t.Fatalf("validate-only: %q, %v", out, err)
	}
	if topics, _ := adm.ListTopics(ctx, "grow"); len(topics["grow"].Partitions) != 5 {
		t.Fatalf("--validate-only changed the count to %d", len(topics["grow"].Partitions))
	}
	if _, _, err := runCLI(t, "", append([]string{"topic", "add-partitions", "grow"}, b...)...); err == nil {
		t.Error("add-partitions without --total was accepted")
	}
}
