package replica

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestQuiesceIdleGroup: an idle group sleeps (no messages at all), a
// produce wakes it and commits, it sleeps again; gossip's word that its
// leader died wakes the followers, which elect a new leader that takes
// writes, and a follower restarted while the group sleeps wakes it.
func TestQuiesceIdleGroup(t *testing.T) {
	c := newRaftCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.produce(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	waitAsleep(t, c)

	// Asleep, nothing crosses the network.
	sent := c.net.sent.Load()
	time.Sleep(50 * c.drv[0].cfg.Tick)
	if n := c.net.sent.Load() - sent; n != 0 {
		t.Fatalf("a quiesced group sent %d messages in 50 ticks", n)
	}

	// A produce wakes it and commits on a quorum; then it sleeps again.
	info, err := c.produce(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	waitAsleep(t, c)
	for _, r := range c.reps {
		if hw := r.HighWatermark(); hw <= info.BaseOffset {
			t.Fatalf("replica %d asleep at high watermark %d, below the committed offset %d", r.self, hw, info.BaseOffset)
		}
	}

	// The leader dies while the group sleeps: the followers' election
	// timers are stopped, so gossip's word is what elects the next one.
	old := c.leader().self
	c.stop(old)
	for _, r := range c.reps {
		r.MemberFailed(old)
	}
	if _, err := c.produce(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if c.leader().self == old {
		t.Fatal("the stopped replica still leads")
	}
	waitAsleep(t, c) // two of three in sync: a quorum sleeps

	// The old leader comes back: gossip's word of it wakes the group,
	// which brings it up to date and sleeps with all three.
	c.start(old)
	for _, r := range c.reps {
		r.MemberJoined(old)
	}
	retryUntil(t, func() error {
		if hw, want := c.reps[old].HighWatermark(), c.leader().HighWatermark(); hw != want {
			return fmt.Errorf("restarted replica at high watermark %d, leader at %d", hw, want)
		}
		return nil
	})
	waitAsleep(t, c)

	// The leader dies again, and this time only the transport tells: its
	// connections ended. The followers' timers run and elect.
	old = c.leader().self
	c.stop(old)
	for _, id := range c.ids {
		if id != old {
			c.drv[id].PeerLost(RaftID(old))
		}
	}
	if _, err := c.produce(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if c.leader().self == old {
		t.Fatal("the stopped replica still leads")
	}
}

// TestQuiesceNeedsQuorum: a leader that cannot hear a quorum never sleeps,
// so CheckQuorum still deposes it.
func TestQuiesceNeedsQuorum(t *testing.T) {
	c := newRaftCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.produce(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	lead := c.leader()
	for _, id := range c.ids {
		if id != lead.self {
			c.stop(id)
			lead.MemberFailed(id)
		}
	}
	retryUntil(t, func() error {
		if lead.IsLeader() {
			return errors.New("a leader alone still leads")
		}
		return nil
	})
	if lead.Asleep() {
		t.Fatal("a leader without a quorum sleeps")
	}
}

func waitAsleep(t *testing.T, c *raftCluster) {
	t.Helper()
	retryUntil(t, func() error {
		for _, r := range c.reps {
			if !r.Asleep() {
				return fmt.Errorf("replica %d awake", r.self)
			}
		}
		return nil
	})
}
