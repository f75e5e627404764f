package integration

// Decommission (issue 16): a 4-node cluster holding an R=3 topic under the
// replication tests' acks=all load and group consumer drains one broker
// with `spool decommission ID --wait`: its partitions move to the other
// three, it leaves the roster while still running, holding nothing, and
// the history checker finds every acknowledged record.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

func TestDecommissionDrainsUnderLoad(t *testing.T) {
	nodes := startCluster(t, 4, withQuickGroups)
	r := startReplication(t, nodes)
	victim := nodes[3]
	start := time.Now()
	out, err := Spool(t, "", "decommission", strconv.Itoa(victim.ID), "--wait", "50s", "--admin", nodes[0].AdminAddr)
	if err != nil || !strings.Contains(out, "drained and removed from the roster") {
		t.Fatalf("spool decommission --wait: %v\n%s", err, out)
	}
	took := time.Since(start)
	retry.Run(t, 30*time.Second, func() error {
		for _, n := range nodes[:3] {
			_, parts := metadata(t, n, r.topic)
			for p, pm := range parts {
				if slices.Contains(pm.Replicas, int32(victim.ID)) {
					return fmt.Errorf("node %d: partition %d still on %v", n.ID, p, pm.Replicas)
				}
			}
		}
		return nil
	})
	if !victim.Running() {
		t.Fatal("the drained broker exited")
	}
	r.w.waitProgress(t, nil, replBatch, replStep, "after the drain")
	r.finish(t, 1)
	t.Logf("drained broker %d in %v:\n%s", victim.ID, took.Round(time.Millisecond), out)
}
