package replica

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestConfirmLeaderRefusesAZombie: a leader frozen (as by SIGSTOP) while
// the others elect a new leader still believes it leads when it resumes;
// ConfirmLeader must not confirm it, while the new leader confirms itself.
func TestConfirmLeaderRefusesAZombie(t *testing.T) {
	c := newRaftCluster(t, 3)
	old := c.leader()
	epoch, _ := old.WritableEpoch()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := old.ConfirmLeader(ctx, epoch); err != nil {
		t.Fatalf("healthy leader %d in epoch %d not confirmed: %v", old.self, epoch, err)
	}

	// Freeze the leader's Raft (its worker blocks on the group's lock) and
	// cut it off, so that on resuming it has heard nothing of the new term.
	old.rg.mu.Lock()
	c.net.mu.Lock()
	c.net.cut[RaftID(old.self)] = true
	c.net.mu.Unlock()
	var next *Replica
	retryUntil(t, func() error {
		for _, r := range c.reps {
			if ep, ok := r.WritableEpoch(); ok && r != old && ep > epoch {
				next = r
				return nil
			}
		}
		return errors.New("no new leader")
	})
	if _, err := next.Produce(ctx, batch(1, "newer"), AcksAll); err != nil {
		t.Fatal(err)
	}
	if ep, ok := old.WritableEpoch(); !ok || ep != epoch {
		t.Fatalf("frozen leader: epoch %d writable %v, want still %d", ep, ok, epoch)
	}
	old.rg.mu.Unlock()
	if err := old.ConfirmLeader(ctx, epoch); !errors.Is(err, ErrNotLeader) {
		t.Errorf("zombie leader %d confirmed in epoch %d: %v", old.self, epoch, err)
	}
	nextEpoch, _ := next.WritableEpoch()
	if err := next.ConfirmLeader(ctx, nextEpoch); err != nil {
		t.Errorf("new leader %d in epoch %d not confirmed: %v", next.self, nextEpoch, err)
	}
	if err := next.ConfirmLeader(ctx, epoch); !errors.Is(err, ErrNotLeader) {
		t.Errorf("new leader %d confirmed in the old epoch %d: %v", next.self, epoch, err)
	}
}
