package client

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node"
	"github.com/spool-log/spool/node/nodetest"
)

// TestListGroupsWithABrokerDown: on 2 brokers __consumer_offsets has one
// copy per partition; once broker 2 is down, the group list still has
// every group broker 1 coordinates, and names broker 2 as down with the
// partitions whose groups cannot be listed, without waiting out retries.
func TestListGroupsWithABrokerDown(t *testing.T) {
	groups := func(c *node.Config) {
		c.Groups.InitialRebalanceDelay = 0
		c.Groups.OffsetsTopicPartitions = 6
	}
	g, first := testCluster(t, func(c *node.Config) { c.NodeID = 1 }, groups)
	second := nodetest.Start(t, groups, func(c *node.Config) {
		c.NodeID = 2
		c.Gossip.Join = []string{first.Membership().Local().GossipAddr}
	})
	retry.Run(t, 20*time.Second, func() error {
		return retry.Check(len(first.Membership().LiveBrokers()) == 2 && len(second.Membership().Roster()) == 2, "node 2 has not joined node 1")
	})
	ctx := testContext(t)
	mustCreate(t, g, "events", 1)
	adm, done, err := g.Admin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	var names []string
	for i := range 12 {
		names = append(names, fmt.Sprintf("readers-%d", i))
	}
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "events", Partition: 0, At: 0, LeaderEpoch: -1})
	for _, name := range names {
		// The coordinator may be broker 2, which learns of the topic by
		// gossip (UNKNOWN_TOPIC_OR_PARTITION until then).
		retry.Run(t, 20*time.Second, func() error { return adm.CommitAllOffsets(ctx, name, offs) })
	}
	coords := adm.FindGroupCoordinators(ctx, names...)
	var onFirst, onSecond []string
	for _, c := range coords {
		if c.Err != nil {
			t.Fatalf("coordinator of %s: %v", c.Name, c.Err)
		}
		if c.NodeID == 1 {
			onFirst = append(onFirst, c.Name)
		} else {
			onSecond = append(onSecond, c.Name)
		}
	}
	if len(onFirst) == 0 || len(onSecond) == 0 {
		t.Fatalf("groups on broker 1 %v, on broker 2 %v: the test needs both", onFirst, onSecond)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := second.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 20*time.Second, func() error {
		return retry.Check(len(first.Membership().LiveBrokers()) == 1, "node 1 still sees node 2 alive")
	})

	start := time.Now()
	listing, err := g.ListGroups(ctx)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, lg := range listing.Groups {
		listed = append(listed, lg.Group)
		if lg.Coordinator != 1 {
			t.Errorf("group %s listed with coordinator %d", lg.Group, lg.Coordinator)
		}
	}
	slices.Sort(onFirst)
	if !slices.Equal(listed, onFirst) {
		t.Errorf("listed %v, want broker 1's groups %v", listed, onFirst)
	}
	if len(listing.Unanswered) != 1 || listing.Unanswered[0].Broker != 2 || !strings.Contains(listing.Unanswered[0].Error, "down") {
		t.Errorf("unanswered %+v, want broker 2 named as down", listing.Unanswered)
	}
	if e := listing.Err(); e == nil || !strings.Contains(e.Error(), "broker 2") {
		t.Errorf("listing error %v, want broker 2 named", e)
	}
	// Broker 1 answers without the client retrying it for a third of its
	// timeout (node/replication_factor_cluster_test.go checks that it
	// answers no error code at all).
	if took > g.Timeout/3 {
		t.Errorf("the list took %v, as long as a retry of broker 1", took)
	}
	t.Logf("listed %d groups of broker 1 in %v, broker 2 named: %s", len(listed), took, listing.Unanswered[0].Error)
}
