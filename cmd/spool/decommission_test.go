package main

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/client"
	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node"
)

// spool decommission on four nodes holding a replication-factor-3 topic:
// without --wait it returns once the drain is recorded (-o json: the
// progress); --cancel puts the broker back; with --wait it prints the
// progress (partitions left, moving) until the broker is drained and out
// of the roster, and every partition is off it.
func TestDecommissionWaitShowsProgress(t *testing.T) {
	c := startCLICluster(t, 4)
	nodes := c.nodes
	b := []string{"--brokers", nodes[0].KafkaAddr(), "--admin", nodes[0].AdminAddr()}
	if _, _, err := runCLI(t, "", append([]string{"topic", "create", "dc", "--partitions", "6", "--replication-factor", "3"}, b...)...); err != nil {
		t.Fatal(err)
	}
	c.waitTopic("dc")
	if _, _, err := runCLI(t, "", append([]string{"produce", "dc"}, b...)...); err != nil {
		t.Logf("produce: %v", err) // records are a bonus; the moves are the test
	}

	out, _, err := runCLI(t, "", append([]string{"decommission", "3", "-o", "json"}, b...)...)
	var st client.DrainStatus
	if err != nil || json.Unmarshal([]byte(out), &st) != nil || st.State != "draining" || st.Broker != 3 {
		t.Fatalf("decommission -o json: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, "", append([]string{"decommission", "3", "--cancel"}, b...)...)
	if err != nil || !strings.Contains(out, "broker 3: drain cancelled; roster now [1 2 3 4]") {
		t.Fatalf("decommission --cancel: %v\n%s", err, out)
	}

	out, _, err = runCLI(t, "", append([]string{"decommission", "4", "--wait", "50s"}, b...)...)
	if err != nil {
		t.Fatalf("decommission --wait: %v\n%s", err, out)
	}
	for _, want := range []string{"broker 4 draining; placement now uses [1 2 3]", "partitions left", "moving", "broker 4 drained and removed from the roster in"} {
		if !strings.Contains(out, want) {
			t.Errorf("decommission --wait printed no %q:\n%s", want, out)
		}
	}
	for _, n := range nodes[:3] {
		e, ok := n.Membership().Topic("dc")
		if !ok {
			t.Fatalf("node %d lost the topic", n.NodeID())
		}
		for p, rs := range e.Replicas {
			if slices.Contains(rs, 4) {
				t.Errorf("node %d: dc/%d still on 4: %v", n.NodeID(), p, rs)
			}
		}
	}
	t.Logf("spool decommission 4 --wait:\n%s", out)
}

// During a rolling upgrade: while a node of the previous version (one that
// advertises no features) is alive, spool decommission and spool rebalance
// pause are refused with an error naming it; once it is gone they work.
func TestDecommissionAndPauseRefusedWhileOlderNodeAlive(t *testing.T) {
	c := &testCluster{t: t}
	c.add()
	c.add()
	old := c.add(func(cfg *node.Config) { cfg.Gossip.Features = []string{} })
	c.waitRoster(3)
	b := []string{"--brokers", c.nodes[0].KafkaAddr(), "--admin", c.nodes[0].AdminAddr()}
	for _, args := range [][]string{{"decommission", "2"}, {"rebalance", "pause"}} {
		out, _, err := runCLI(t, "", append(args, b...)...)
		if err == nil || !strings.Contains(err.Error(), "broker 3 (spool-3)") || !strings.Contains(err.Error(), "older version") {
			t.Fatalf("spool %s with an older node alive: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("spool %s: %v", strings.Join(args, " "), err)
	}
	if c.nodes[0].Membership().RebalancePaused() || len(c.nodes[0].Membership().DrainingBrokers()) != 0 {
		t.Fatal("a refused command changed the cluster")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := old.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 20*time.Second, func() error {
		if _, alive := c.nodes[0].Membership().LiveBrokers()[3]; alive {
			return errors.New("node 1 still sees node 3 alive")
		}
		return nil
	})
	if out, _, err := runCLI(t, "", append([]string{"rebalance", "pause"}, b...)...); err != nil || !strings.Contains(out, "rebalancing paused") {
		t.Fatalf("rebalance pause once the older node is gone: %v\n%s", err, out)
	}
	if out, _, err := runCLI(t, "", append([]string{"decommission", "3"}, b...)...); err != nil {
		t.Fatalf("decommission once the older node is gone: %v\n%s", err, out)
	}
}
