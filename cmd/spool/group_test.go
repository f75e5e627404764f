package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node"
)

func TestGroupCommands(t *testing.T) {
	n := testNode(t, func(c *node.Config) {
		c.Groups.InitialRebalanceDelay = 0
		c.Groups.OffsetsTopicPartitions = 3
	})
	b := []string{"--brokers", n.KafkaAddr()}
	run := func(args ...string) (string, error) {
		t.Helper()
		out, _, err := runCLI(t, "", append(args, b...)...)
		return out, err
	}
	mustRun := func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Fatalf("spool %v: %v", args, err)
		}
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "events"); err != nil {
		t.Fatal(err)
	}
	var rs []*kgo.Record
	for p := range int32(2) {
		for i := range 10 {
			rs = append(rs, &kgo.Record{Topic: "events", Partition: p, Value: []byte(fmt.Sprint(i))})
		}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var commit kadm.Offsets
	commit.Add(kadm.Offset{Topic: "events", Partition: 0, At: 7, LeaderEpoch: -1})
	commit.Add(kadm.Offset{Topic: "events", Partition: 1, At: 3, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "readers", commit); err != nil {
		t.Fatal(err)
	}

	if out := mustRun("group", "list"); !regexp.MustCompile(`readers\s+Empty`).MatchString(out) {
		t.Fatalf("list output:\n%s", out)
	}
	row := func(out string, p, committed, lag string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^events\s+` + p + `\s+` + committed + `\s+10\s+` + lag + `\b`)
	}
	out := mustRun("group", "describe", "readers")
	if !row(out, "0", "7", "3").MatchString(out) || !row(out, "1", "3", "7").MatchString(out) || !strings.Contains(out, "total lag 10") {
		t.Fatalf("describe output:\n%s", out)
	}

	// With a member consuming, describe shows it and its assignment, and
	// resetting is refused.
	member, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ConsumerGroup("readers"), kgo.ConsumeTopics("events"), kgo.ClientID("reader-1"), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	pollCtx, stopPolling := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for pollCtx.Err() == nil {
			member.PollFetches(pollCtx)
		}
	}()
	retry.Run(t, 20*time.Second, func() error {
		out = mustRun("group", "describe", "readers")
		return retry.Check(strings.Contains(out, "state Stable") && strings.Contains(out, "reader-1") && strings.Contains(out, "events[0 1]"),
			"describe does not show the member:\n%s", out)
	})
	if _, err := run("group", "reset-offsets", "readers", "--topic", "events", "--to-earliest"); err == nil || !strings.Contains(err.Error(), "active members") {
		t.Fatalf("reset with an active member: %v", err)
	}
	stopPolling()
	<-polled
	member.Close() // leaves the group

	for _, tc := range []struct {
		flags  []string
		p0, p1 string
	}{
		{[]string{"--to-earliest"}, "0", "0"},
		{[]string{"--to-offset", "5"}, "5", "5"},
		{[]string{"--to-offset", "50"}, "10", "10"},
		{[]string{"--to-latest", "--partitions", "1"}, "10", "10"},
		{[]string{"--to-earliest", "--partitions", "1"}, "10", "0"},
	} {
		mustRun(append([]string{"group", "reset-offsets", "readers", "--topic", "events"}, tc.flags...)...)
		offs, err := adm.FetchOffsets(ctx, "readers")
		if err != nil {
			t.Fatal(err)
		}
		o0, _ := offs.Lookup("events", 0)
		o1, _ := offs.Lookup("events", 1)
		if fmt.Sprint(o0.At) != tc.p0 || fmt.Sprint(o1.At) != tc.p1 {
			t.Fatalf("after reset %v: offsets %d %d, want %s %s", tc.flags, o0.At, o1.At, tc.p0, tc.p1)
		}
	}
	out = mustRun("group", "reset-offsets", "readers", "--topic", "events", "--to-latest", "--dry-run")
	if !strings.Contains(out, "dry run") {
		t.Fatalf("dry run output:\n%s", out)
	}
	if offs, _ := adm.FetchOffsets(ctx, "readers"); func() int64 { o, _ := offs.Lookup("events", 1); return o.At }() != 0 {
		t.Fatal("a dry run committed")
	}
	for _, bad := range [][]string{
		{"group", "reset-offsets", "readers", "--topic", "events"},
		{"group", "reset-offsets", "readers", "--topic", "events", "--to-earliest", "--to-latest"},
		{"group", "reset-offsets", "readers", "--to-earliest"},
		{"group", "reset-offsets", "readers", "--topic", "events", "--to-earliest", "--partitions", "9"},
	} {
		if _, err := run(bad...); err == nil {
			t.Fatalf("spool %v succeeded", bad)
		}
	}
}
