package main

import (
	"strings"
	"testing"
)

func TestTopicCommands(t *testing.T) {
	n := testNode(t)
	b := []string{"--brokers", n.KafkaAddr()}
	run := func(args ...string) string {
		t.Helper()
		out, _, err := runCLI(t, "", append(args, b...)...)
		if err != nil {
			t.Fatalf("spool %v: %v", args, err)
		}
		return out
	}
	out := run("topic", "create", "orders", "--partitions", "3", "--config", "retention.ms=60000")
	if !strings.Contains(out, "created orders (3 partitions") {
		t.Fatalf("create output: %s", out)
	}
	if out := run("topic", "list"); !strings.Contains(out, "orders") || !strings.Contains(out, "3") {
		t.Fatalf("list output: %s", out)
	}
	out = run("topic", "describe", "orders")
	for _, want := range []string{"partitions 3", "retention.ms=60000 (dynamic_topic_config)", "PARTITION"} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe output lacks %q:\n%s", want, out)
		}
	}
	if _, _, err := runCLI(t, "", append([]string{"topic", "create", "orders"}, b...)...); err == nil || !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
		t.Fatalf("second create: %v", err)
	}
	if _, _, err := runCLI(t, "", append([]string{"topic", "create", "../bad"}, b...)...); err == nil || !strings.Contains(err.Error(), "INVALID_TOPIC_EXCEPTION") {
		t.Fatalf("create ../bad: %v", err)
	}
	if out := run("topic", "delete", "orders"); !strings.Contains(out, "deleted orders") {
		t.Fatalf("delete output: %s", out)
	}
	if out := run("topic", "list"); strings.Contains(out, "orders") {
		t.Fatalf("list after delete: %s", out)
	}
}
