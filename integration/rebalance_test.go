package integration

// Automatic rebalancing (issue 16): a 3-node cluster holding an R=3 topic
// under the replication tests' acks=all load and group consumer grows to
// 5 nodes started with --auto-rebalance; the partitions move to where
// placement over the five brokers puts them, at most two at a time, and
// the history checker finds every acknowledged record.

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/membership"
)

func TestAutoRebalanceGrowUnderLoad(t *testing.T) {
	auto := WithArgs("--rebalance-max-moves", "2") // automatic rebalancing is the default
	nodes := startCluster(t, 3, withQuickGroups, auto)
	r := startReplication(t, nodes)
	for id := 4; id <= 5; id++ {
		r.nodes = append(r.nodes, StartNode(t, WithID(id), WithJoin(nodes[0].GossipAddr), withQuickGroups, auto))
	}
	want := membership.PlaceTopic(r.topic, replPartitions, []int32{1, 2, 3, 4, 5}, 3)
	onNew := 0
	for _, rs := range want {
		for _, b := range rs {
			if b > 3 {
				onNew++
			}
		}
	}
	start := time.Now()
	retry.Run(t, 3*replStep, func() error {
		for _, n := range r.nodes {
			_, parts := metadata(t, n, r.topic)
			for p, pm := range parts {
				if len(pm.Replicas) != len(want[p]) || !sameIDs(pm.Replicas, want[p]) {
					return fmt.Errorf("node %d: partition %d on %v, placement over five brokers %v", n.ID, p, pm.Replicas, want[p])
				}
			}
		}
		return nil
	})
	t.Logf("%d replicas moved onto the new nodes in %v", onNew, time.Since(start).Round(time.Millisecond))
	r.w.waitProgress(t, nil, replBatch, replStep, "after the rebalance")
	r.finish(t, 1)
}

func sameIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
