package client

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/node"
)

// consumeAll runs Consume with o and returns the values it was given.
func consumeAll(t *testing.T, g Config, o ConsumeOptions) ([]string, error) {
	t.Helper()
	var got []string
	o.Records = func(rs []*kgo.Record) error {
		for _, r := range rs {
			got = append(got, string(r.Value))
		}
		return nil
	}
	if o.From == "" {
		o.From = "beginning"
	}
	err := g.Consume(testContext(t), o)
	return got, err
}

func TestConsumePositionsAndCount(t *testing.T) {
	g, _ := testCluster(t)
	mustCreate(t, g, "pos", 1)
	if _, err := g.Produce(testContext(t), ProduceOptions{Topic: "pos", Partition: -1, Input: strings.NewReader("m0\nm1\nm2\nm3\nm4\n")}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		o    ConsumeOptions
		want string
	}{
		{ConsumeOptions{Partition: -1}, "m0 m1 m2 m3 m4"},
		{ConsumeOptions{Partition: -1, From: "3"}, "m3 m4"},
		{ConsumeOptions{Partition: 0, From: "-2"}, "m3 m4"},
		{ConsumeOptions{Partition: -1, Count: 2}, "m0 m1"},
		{ConsumeOptions{Partition: -1, From: "end"}, ""},
	} {
		c.o.Topic = "pos"
		got, err := consumeAll(t, g, c.o)
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("%+v: %v %q, want %q", c.o, err, got, c.want)
		}
	}
	for _, bad := range []ConsumeOptions{{Partition: -1, Count: -1}, {Partition: -1, From: "yesterday"}, {Partition: 7}, {Partition: -3}, {Partition: 0, Group: "g"}} {
		bad.Topic = "pos"
		if _, err := consumeAll(t, g, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if _, err := consumeAll(t, g, ConsumeOptions{Topic: "nope", Partition: -1}); err == nil || !strings.Contains(err.Error(), "topic nope does not exist") {
		t.Errorf("consume of a missing topic: %v", err)
	}
}

// TestConsumeGroupWithNothingLeft: a group whose committed offsets are at
// the end reads nothing and stops, rather than waiting for records.
func TestConsumeGroupWithNothingLeft(t *testing.T) {
	g, _ := testCluster(t, func(c *node.Config) {
		c.Groups.InitialRebalanceDelay = 0
		c.Groups.OffsetsTopicPartitions = 1
	})
	mustCreate(t, g, "done", 2)
	if _, err := g.Produce(testContext(t), ProduceOptions{Topic: "done", Partition: 0, Input: strings.NewReader("a\nb\n")}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"a b", ""} {
		got, err := consumeAll(t, g, ConsumeOptions{Topic: "done", Partition: -1, Group: "g"})
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("consume in group g, run %d: %v %q, want %q", i+1, err, got, want)
		}
	}
}
