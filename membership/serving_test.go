package membership

import (
	"fmt"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

func TestMemberServes(t *testing.T) {
	current := Features
	for _, c := range []struct {
		name  string
		m     Member
		alive int
		want  bool
	}{
		{"not serving yet", Member{Status: StatusAlive, Features: current, Serving: -1}, 1, false},
		{"serving, seeing all", Member{Status: StatusAlive, Features: current, Serving: 3}, 3, true},
		{"serving, seeing more", Member{Status: StatusAlive, Features: current, Serving: 4}, 3, true},
		{"serving, seeing fewer", Member{Status: StatusAlive, Features: current, Serving: 2}, 3, false},
		{"failed", Member{Status: StatusFailed, Features: current, Serving: 3}, 3, false},
		{"left", Member{Status: StatusLeft, Features: current, Serving: 3}, 3, false},
		{"an older version, alive", Member{Status: StatusAlive, Serving: -1}, 3, true},
		{"an older version, failed", Member{Status: StatusFailed, Serving: -1}, 3, false},
	} {
		if got := MemberServes(c.m, c.alive); got != c.want {
			t.Errorf("%s: MemberServes(%+v, %d) = %v, want %v", c.name, c.m, c.alive, got, c.want)
		}
	}
}

// A node's "sv" tag appears once it serves and follows the alive brokers
// it sees: a third member joining raises it, and peers read it.
func TestServingTagFollowsTheAliveBrokers(t *testing.T) {
	nodes := cluster(t, 2)
	a, b := nodes[0], nodes[1]
	servingOf := func(from *testNode, id int32) int {
		for _, m := range from.Members() {
			if m.BrokerID == id {
				return m.Serving
			}
		}
		return -2
	}
	if s := servingOf(b, 1); s != -1 {
		t.Fatalf("node 1 publishes serving %d before it serves", s)
	}
	a.SetServing()
	retry.Run(t, 10*time.Second, func() error {
		if s := servingOf(b, 1); s != 2 {
			return fmt.Errorf("node 2 sees node 1 serving %d, want 2", s)
		}
		return nil
	})
	if s := servingOf(a, 2); s != -1 {
		t.Errorf("node 2 publishes serving %d without serving", s)
	}
	c := startNode(t, newTestLogger(t), 3)
	c.join(t, a)
	retry.Run(t, 10*time.Second, func() error {
		for _, n := range []*testNode{b, c} {
			if s := servingOf(n, 1); s != 3 {
				return fmt.Errorf("%s sees node 1 serving %d, want 3", n.cfg.NodeName, s)
			}
		}
		return nil
	})
	c.stop() // a crash: node 1 sees 2 alive again once it is failed
	retry.Run(t, 20*time.Second, func() error {
		if s := servingOf(b, 1); s != 2 {
			return fmt.Errorf("node 2 sees node 1 serving %d after node 3 failed, want 2", s)
		}
		return nil
	})
}
