package membership

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

// withFeatures sets the features a node advertises; none makes it look
// like a node of the previous version.
func withFeatures(fs ...string) nodeOpt {
	return func(c *Config) { c.Features = append([]string{}, fs...) }
}

// During a rolling upgrade a live node of the previous version (no "feat"
// tag) holds back a decommission, an automatic drain and a pause, with an
// error naming it, and nothing is written; once it is gone, and once it is
// back upgraded, they go through and reach it.
func TestOlderNodeHoldsBackDrainAndPause(t *testing.T) {
	log := newTestLogger(t)
	n1 := startNode(t, log, 1)
	n2 := startNode(t, log, 2)
	old := startNode(t, log, 3, withFeatures())
	n2.join(t, n1)
	old.join(t, n1)
	for _, n := range []*testNode{n1, n2, old} {
		retry.Run(t, 10*time.Second, func() error {
			if len(n.Roster()) != 3 || aliveCount(n.Agent) != 3 {
				return fmt.Errorf("%s: roster %v, %d alive", n.cfg.NodeName, n.Roster(), aliveCount(n.Agent))
			}
			return nil
		})
	}
	if !n1.Local().Has(FeatureDrain) || !n1.Local().Has(FeatureSettings) {
		t.Fatalf("this version advertises %v", n1.Local().Features)
	}
	for _, m := range n1.Members() {
		if m.Name == "node-3" && m.Features != nil {
			t.Fatalf("node-3 advertises %v, want none", m.Features)
		}
	}
	digest := n1.roster.Digest()
	wantRefusal := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrMixedVersions) {
			t.Fatalf("%s: %v, want ErrMixedVersions", what, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "broker 3 (node-3)") || strings.Contains(msg, "broker 1 ") || strings.Contains(msg, "broker 2 ") {
			t.Fatalf("%s: %q does not name just the old node", what, msg)
		}
	}
	wantRefusal("decommission", n1.Decommission(2, false))
	wantRefusal("forced decommission", n2.Decommission(1, true))
	wantRefusal("automatic drain", n1.AutoDrain(2))
	wantRefusal("pause", n2.SetRebalancePaused(true))
	if err := n2.SetRebalancePaused(false); err != nil {
		t.Fatalf("resume refused: %v", err)
	}
	if n1.roster.Digest() != digest || len(n1.DrainingBrokers()) != 0 || n2.RebalancePaused() {
		t.Fatalf("a refused change was made: roster %+v, paused %v", n1.RosterEntries(), n2.RebalancePaused())
	}

	// Gone: a failed member holds nothing back.
	port := old.Local().GossipAddr[strings.LastIndex(old.Local().GossipAddr, ":")+1:]
	var bindPort int
	fmt.Sscan(port, &bindPort)
	old.stop()
	retry.Run(t, 10*time.Second, wantStatus(n1.Agent, "node-3", StatusFailed))
	if err := n1.RequireFeature(FeatureDrain); err != nil {
		t.Fatalf("with the old node down: %v", err)
	}

	// Back upgraded (same data, this version's features): the changes go
	// through and it takes them.
	up := startNode(t, log, 3, withDir(old.cfg.DataDir), withPort(bindPort))
	retry.Run(t, 10*time.Second, func() error {
		for _, m := range n1.Members() {
			if m.Name == "node-3" && m.Status == StatusAlive && m.Has(FeatureDrain) {
				return nil
			}
		}
		return fmt.Errorf("node-1 sees %+v", n1.Members())
	})
	if err := n1.Decommission(2, false); err != nil {
		t.Fatalf("decommission after the upgrade: %v", err)
	}
	if err := n2.SetRebalancePaused(true); err != nil {
		t.Fatalf("pause after the upgrade: %v", err)
	}
	retry.Run(t, 10*time.Second, func() error {
		e, _ := up.roster.entry(2)
		if !e.Draining() || !up.RebalancePaused() {
			return fmt.Errorf("upgraded node: broker 2 %+v, paused %v", e, up.RebalancePaused())
		}
		return nil
	})
}
