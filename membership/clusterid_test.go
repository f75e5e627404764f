package membership

import (
	"fmt"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

func withClusterID(id string, born time.Time) nodeOpt {
	return func(c *Config) { c.ClusterID, c.ClusterIDBorn = id, born }
}

func sameClusterID(want string, nodes ...*testNode) func() error {
	return func() error {
		for _, n := range nodes {
			if got := n.ClusterID(); got != want {
				return fmt.Errorf("%s has cluster id %q, want %q", n.cfg.NodeName, got, want)
			}
			for _, m := range n.Members() {
				if m.Status != StatusAlive {
					continue // a failed member's tags are frozen as last heard
				}
				if m.ClusterID != want {
					return fmt.Errorf("%s sees %s advertise cluster id %q, want %q", n.cfg.NodeName, m.Name, m.ClusterID, want)
				}
			}
		}
		return nil
	}
}

// TestClusterIDConverges: three nodes that each start with their own id
// settle on one, the oldest proposal, and keep it across a restart; a node
// joining later adopts it rather than imposing its own.
func TestClusterIDConverges(t *testing.T) {
	log := newTestLogger(t)
	t0 := time.Unix(1_700_000_000, 0)
	a := startNode(t, log, 1, withClusterID("cluster-a", t0.Add(2*time.Hour)))
	b := startNode(t, log, 2, withClusterID("cluster-b", t0))
	c := startNode(t, log, 3) // random id, born now
	if a.ClusterID() != "cluster-a" || b.ClusterID() != "cluster-b" || c.ClusterID() == a.ClusterID() {
		t.Fatalf("proposals: %q %q %q", a.ClusterID(), b.ClusterID(), c.ClusterID())
	}
	b.join(t, a)
	c.join(t, a)
	retry.Run(t, slow(10*time.Second), sameClusterID("cluster-b", a, b, c))

	// Restarted on its data, a keeps the adopted id even though its
	// configured proposal still says cluster-a.
	dir := a.cfg.DataDir
	a.stop()
	a2 := startNode(t, log, 1, withDir(dir), withClusterID("cluster-a", t0.Add(-time.Hour)))
	if got := a2.ClusterID(); got != "cluster-b" {
		t.Fatalf("restarted node has cluster id %q, want the adopted cluster-b", got)
	}

	late := startNode(t, log, 4, withClusterID("cluster-late", time.Now()))
	late.join(t, b)
	retry.Run(t, slow(10*time.Second), sameClusterID("cluster-b", b, c, late))
}

func TestClusterIDOrderAndTag(t *testing.T) {
	old := clusterID{ID: "zzz", Born: 1}
	young := clusterID{ID: "aaa", Born: 2}
	if !old.before(young) || young.before(old) {
		t.Fatal("the older proposal must win whatever its id")
	}
	if !(clusterID{ID: "a", Born: 1}).before(clusterID{ID: "b", Born: 1}) {
		t.Fatal("equal births: the lower id wins")
	}
	got, err := parseClusterIDTag(old.tag())
	if err != nil || got != old {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for _, bad := range []string{"", "12", "x/abc", "1/", "1/bad id", "1/" + string(make([]byte, 65))} {
		if _, err := parseClusterIDTag(bad); err == nil {
			t.Errorf("tag %q accepted", bad)
		}
	}
}
