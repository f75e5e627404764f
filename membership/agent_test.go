package membership

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

func TestJoinFailLeave(t *testing.T) {
	log := newTestLogger(t)
	a := startNode(t, log, 1, withoutPeriodicPushPull())
	b := startNode(t, log, 2, withoutPeriodicPushPull())
	c := startNode(t, log, 3, withoutPeriodicPushPull())
	events, cancel := a.Subscribe()
	defer cancel()
	b.join(t, a)
	c.join(t, a)

	for _, n := range []*testNode{a, b, c} {
		retry.Run(t, slow(5*time.Second), func() error {
			if got := aliveCount(n.Agent); got != 3 {
				return fmt.Errorf("%s sees %d alive", n.cfg.NodeName, got)
			}
			return nil
		})
	}
	var seenC Member
	for _, m := range b.Members() {
		if m.Name == "node-3" {
			seenC = m
		}
	}
	if seenC.BrokerID != 3 || seenC.KafkaAddr != "127.0.0.1:19003" || seenC.AdminAddr != c.cfg.AdminAddr ||
		seenC.Rack != "r1" || seenC.Gen != 1 || seenC.GossipAddr != c.gossipAddr() {
		t.Fatalf("tags of node-3 as seen by node-2: %+v", seenC)
	}

	// A crash: no leave. Peers must mark it failed.
	crashed := time.Now()
	c.stop()
	retry.Run(t, slow(10*time.Second), wantStatus(a.Agent, "node-3", StatusFailed))
	failA := time.Since(crashed)
	retry.Run(t, slow(10*time.Second), wantStatus(b.Agent, "node-3", StatusFailed))
	t.Logf("failure of node-3 seen by node-1 after %v, by all after %v", failA.Round(time.Millisecond), time.Since(crashed).Round(time.Millisecond))

	// A graceful stop: peers mark it left.
	if err := b.Leave(); err != nil {
		t.Fatal(err)
	}
	b.stop()
	retry.Run(t, slow(5*time.Second), wantStatus(a.Agent, "node-2", StatusLeft))

	seen := map[string]bool{}
	retry.Run(t, slow(5*time.Second), func() error {
		for {
			select {
			case e := <-events:
				seen[fmt.Sprintf("%s %s", e.Type, e.Member.Name)] = true
				continue
			default:
			}
			break
		}
		for _, want := range []string{"join node-2", "join node-3", "fail node-3", "leave node-2"} {
			if !seen[want] {
				return fmt.Errorf("no %q event yet (have %v)", want, seen)
			}
		}
		return nil
	})
	if err := a.Health(); err != nil {
		t.Fatalf("healthy node reports %v", err)
	}
}

func TestRejoinFromSnapshot(t *testing.T) {
	log := newTestLogger(t)
	a := startNode(t, log, 1)
	b := startNode(t, log, 2)
	b.join(t, a)
	retry.Run(t, 5*time.Second, wantStatus(a.Agent, "node-2", StatusAlive))
	port := b.Local().GossipAddr[strings.LastIndex(b.Local().GossipAddr, ":")+1:]
	var bindPort int
	fmt.Sscan(port, &bindPort)

	b.stop()
	retry.Run(t, 10*time.Second, wantStatus(a.Agent, "node-2", StatusFailed))

	// Same data dir and gossip port, no join: Serf's snapshot brings it back.
	restarted := time.Now()
	b2 := startNode(t, log, 2, withDir(b.cfg.DataDir), withPort(bindPort))
	if b2.Generation() != 2 {
		t.Fatalf("boot generation %d after restart, want 2", b2.Generation())
	}
	retry.Run(t, 10*time.Second, func() error {
		for _, m := range a.Members() {
			if m.Name == "node-2" && m.Status == StatusAlive && m.Gen == 2 {
				return nil
			}
		}
		return fmt.Errorf("node-1 sees %+v", a.Members())
	})
	retry.Run(t, 5*time.Second, wantStatus(b2.Agent, "node-1", StatusAlive))
	t.Logf("restarted node seen alive again after %v", time.Since(restarted).Round(time.Millisecond))

	// After a graceful leave too (RejoinAfterLeave).
	if err := b2.Leave(); err != nil {
		t.Fatal(err)
	}
	b2.stop()
	retry.Run(t, 5*time.Second, wantStatus(a.Agent, "node-2", StatusLeft))
	b3 := startNode(t, log, 2, withDir(b.cfg.DataDir), withPort(bindPort))
	retry.Run(t, 10*time.Second, wantStatus(a.Agent, "node-2", StatusAlive))
	_ = b3
}

func TestGossipKey(t *testing.T) {
	log := newTestLogger(t)
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i + 1)
	}
	other := make([]byte, 32)
	a := startNode(t, log, 1, withKey(key))
	b := startNode(t, log, 2, withKey(key))
	b.join(t, a)

	for _, tc := range []struct {
		name string
		opts []nodeOpt
	}{
		{"wrong key", []nodeOpt{withKey(other)}},
		{"no key", nil},
	} {
		n := startNode(t, log, 3, tc.opts...)
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		err := n.Join(ctx, a.gossipAddr())
		cancel()
		if err == nil {
			t.Fatalf("%s: joined an encrypted cluster", tc.name)
		}
		if !strings.Contains(err.Error(), "gossip key") {
			t.Errorf("%s: error does not name the gossip key: %v", tc.name, err)
		}
		if n.Health() == nil {
			t.Errorf("%s: Health is nil after a failed join", tc.name)
		}
		if got := statusOf(a.Agent, "node-3"); got != "" {
			t.Fatalf("%s: node-1 lists node-3 as %q", tc.name, got)
		}
		n.stop()
	}

	// The right key from a keyring file joins.
	ring := t.TempDir() + "/keyring"
	seed := startNode(t, log, 4, withKey(key), withKeyring(ring))
	seed.stop()
	k := startNode(t, log, 5, withKeyring(ring))
	k.join(t, b)
	retry.Run(t, 5*time.Second, wantStatus(a.Agent, "node-5", StatusAlive))
	if got := statusOf(a.Agent, "node-3"); got != "" {
		t.Fatalf("node-3 got in after all: %q", got)
	}
}

func TestDuplicatesRefused(t *testing.T) {
	log := newTestLogger(t)
	a := startNode(t, log, 1)
	b := startNode(t, log, 2)
	b.join(t, a)
	retry.Run(t, 5*time.Second, wantStatus(a.Agent, "node-2", StatusAlive))

	dupID := startNode(t, log, 2, withName("impostor"))
	err := dupID.Join(context.Background(), a.gossipAddr())
	if !errors.Is(err, ErrDuplicateBrokerID) {
		t.Fatalf("duplicate id join: %v, want ErrDuplicateBrokerID", err)
	}
	if !errors.Is(dupID.Health(), ErrDuplicateBrokerID) {
		t.Fatalf("duplicate id health: %v", dupID.Health())
	}

	dupName := startNode(t, log, 7, withName("node-2"))
	err = dupName.Join(context.Background(), a.gossipAddr())
	if !errors.Is(err, ErrDuplicateName) {
		t.Fatalf("duplicate name join: %v, want ErrDuplicateName", err)
	}

	for _, n := range []*testNode{a, b} {
		for _, m := range n.Members() {
			if m.Name == "impostor" || m.BrokerID == 7 {
				t.Fatalf("%s lets in %+v", n.cfg.NodeName, m)
			}
		}
		if err := n.Health(); err != nil {
			t.Fatalf("legitimate %s unhealthy: %v", n.cfg.NodeName, err)
		}
	}
}
