package client

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spool-log/spool/node"
)

// TestGroupsListDescribeReset lists, describes and resets a group with
// committed offsets and no members.
func TestGroupsListDescribeReset(t *testing.T) {
	g, _ := testCluster(t, func(c *node.Config) {
		c.Groups.InitialRebalanceDelay = 0
		c.Groups.OffsetsTopicPartitions = 3
	})
	ctx := testContext(t)
	mustCreate(t, g, "events", 2)
	for p := range int32(2) {
		if _, err := g.Produce(ctx, ProduceOptions{Topic: "events", Partition: p, Input: strings.NewReader(strings.Repeat("x\n", 10))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := g.ResetOffsets(ctx, ResetOffsetsOptions{Group: "readers", Topic: "events", To: "7"}); err != nil {
		t.Fatal(err)
	}
	listing, err := g.ListGroups(ctx)
	if err != nil || listing.Err() != nil || len(listing.Groups) != 1 || listing.Groups[0] != (ListedGroup{Group: "readers", State: "Empty", ProtocolType: "", Coordinator: 1}) {
		t.Fatalf("ListGroups: %v %+v", err, listing)
	}
	d, err := g.DescribeGroups(ctx, []string{"readers", "nobody"})
	if err != nil || len(d.Groups) != 1 || d.Groups[0].TotalLag != 6 || fmt.Sprint(d.Missing) != "[nobody]" || d.Err() == nil || !strings.Contains(d.Err().Error(), "no group nobody") {
		t.Fatalf("DescribeGroups: %v %+v", err, d)
	}

	committed := func() string {
		t.Helper()
		adm, done, err := g.Admin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer done()
		offs, err := adm.FetchOffsets(ctx, "readers")
		if err != nil {
			t.Fatal(err)
		}
		o0, _ := offs.Lookup("events", 0)
		o1, _ := offs.Lookup("events", 1)
		return fmt.Sprint(o0.At, " ", o1.At)
	}
	for _, c := range []struct {
		o    ResetOffsetsOptions
		want string
	}{
		{ResetOffsetsOptions{To: "earliest"}, "0 0"},
		{ResetOffsetsOptions{To: "5"}, "5 5"},
		{ResetOffsetsOptions{To: "50"}, "10 10"},
		{ResetOffsetsOptions{To: "-3", Partitions: []int32{1}}, "10 7"},
		{ResetOffsetsOptions{To: "earliest", DryRun: true}, "10 7"},
	} {
		c.o.Group, c.o.Topic = "readers", "events"
		res, err := g.ResetOffsets(ctx, c.o)
		if err != nil {
			t.Fatalf("%+v: %v", c.o, err)
		}
		if got := committed(); got != c.want {
			t.Errorf("after %+v: committed %s, want %s", c.o, got, c.want)
		}
		if res.DryRun != c.o.DryRun || len(res.Offsets) != 2-min(len(c.o.Partitions), 1) {
			t.Errorf("%+v returned %+v", c.o, res)
		}
	}
	for _, bad := range []ResetOffsetsOptions{{Topic: "events", To: "soon"}, {To: "earliest"}, {Topic: "events", To: "earliest", Partitions: []int32{9}}} {
		bad.Group = "readers"
		if _, err := g.ResetOffsets(ctx, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
