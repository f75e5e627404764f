package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// topicConfig reads one config of a topic back from the node.
func topicConfig(t *testing.T, adm *kadm.Client, topic, key string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c.MaybeValue(), c.Source.String()
		}
	}
	t.Fatalf("%s has no config %s", topic, key)
	return "", ""
}

func adminClient(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func TestTopicAlterConfig(t *testing.T) {
	n := testNode(t)
	b := []string{"--brokers", n.KafkaAddr()}
	adm := adminClient(t, n.KafkaAddr())
	if _, _, err := runCLI(t, "", append([]string{"topic", "create", "cfg", "--config", "segment.bytes=1048576"}, b...)...); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(t, "", append([]string{"topic", "alter-config", "cfg", "retention.ms=1234", "cleanup.policy=compact"}, b...)...)
	if err != nil || !strings.Contains(out, "altered configs of cfg") {
		t.Fatalf("alter-config: %q, %v", out, err)
	}
	for key, want := range map[string]string{"retention.ms": "1234", "cleanup.policy": "compact", "segment.bytes": "1048576"} {
		if v, src := topicConfig(t, adm, "cfg", key); v != want || src != "DYNAMIC_TOPIC_CONFIG" {
			t.Errorf("%s = %s (%s), want %s set on the topic (incremental: the untouched segment.bytes stays)", key, v, src, want)
		}
	}

	if _, _, err := runCLI(t, "", append([]string{"topic", "alter-config", "cfg", "--delete", "retention.ms"}, b...)...); err != nil {
		t.Fatal(err)
	}
	if _, src := topicConfig(t, adm, "cfg", "retention.ms"); src != "DEFAULT_CONFIG" {
		t.Errorf("retention.ms after --delete: source %s, want DEFAULT_CONFIG", src)
	}

	_, _, err = runCLI(t, "", append([]string{"topic", "alter-config", "cfg", "retention.ms=5", "no.such.config=1"}, b...)...)
	if err == nil || !strings.Contains(err.Error(), "INVALID_CONFIG") {
		t.Fatalf("unknown key: %v, want INVALID_CONFIG", err)
	}
	if _, src := topicConfig(t, adm, "cfg", "retention.ms"); src != "DEFAULT_CONFIG" {
		t.Errorf("a refused request changed retention.ms (source %s)", src)
	}

	out, _, err = runCLI(t, "", append([]string{"topic", "alter-config", "cfg", "retention.ms=99", "--validate-only"}, b...)...)
	if err != nil || !strings.Contains(out, "validated") {
		t.Fatalf("validate-only: %q, %v", out, err)
	}
	if _, src := topicConfig(t, adm, "cfg", "retention.ms"); src != "DEFAULT_CONFIG" {
		t.Errorf("--validate-only changed retention.ms (source %s)", src)
	}
	if _, _, err := runCLI(t, "", append([]string{"topic", "alter-config", "cfg", "notkv"}, b...)...); err == nil {
		t.Error("an argument without = was accepted")
	}
}
