package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// A replica the group is adding, still waiting for its snapshot, has no
// configuration: it must elect nobody. Here broker 0's disk is replaced
// while the partition moves from {0,1,2} to {0,1,3}, and 0 comes back
// believing (as the node once had it) that the voters are the move's
// target. With the real leaders 1 and 2 out of reach, 0 campaigns; a vote
// from 3 would make it leader of a second history at {0,3}.
func TestRaftJoiningReplicaElectsNobody(t *testing.T) {
	c := newRaftCluster(t, 3)
	ctx := context.Background()
	for i := range 5 {
		if _, err := c.produce(ctx, fmt.Sprint("before-", i)); err != nil {
			t.Fatal(err)
		}
	}
	c.stop(0)
	c.dirs[0] = t.TempDir()
	// If 0 led, 1 or 2 leads now.
	c.leader()

	c.holdCopies = make(chan struct{})
	defer close(c.holdCopies)
	c.joining = map[int32]bool{3: true}
	c.dirs[3] = t.TempDir()
	c.changeConf(t, func(cf Conf) bool { return slices.Contains(cf.Learners, 3) }, func(ctx context.Context, r *Replica) error {
		return r.ChangeConf(ctx, ConfChange{AddLearner, 3})
	})
	c.start(3)
	c.ids = append(c.ids, 3)
	retryUntil(t, func() error {
		if c.copies.Load() == 0 {
			return errors.New("learner 3 has not been sent the snapshot yet")
		}
		return nil
	})
	if cf, _ := c.reps[3].Conf(); len(cf.Voters) > 0 {
		t.Fatalf("learner 3 holds configuration %+v before its snapshot", cf)
	}

	c.net.mu.Lock()
	c.net.cut[RaftID(1)], c.net.cut[RaftID(2)] = true, true
	c.net.mu.Unlock()
	c.replicas = map[int32][]int32{0: {0, 1, 3}}
	c.start(0)
	// Long enough for 3 to leave the old leader's lease several times
	// over, and for 0 to ask it again after.
	g3 := c.reps[3].rg
	startTicks := g3.ticks.Load()
	var votesThen int
	retryUntil(t, func() error {
		if c.reps[0].IsLeader() {
			t.Fatal("broker 0 leads a group of {0,3}: the joining replica voted")
		}
		if g3.ticks.Load()-startTicks < int64(5*DefaultDriverConfig().ElectionTick) {
			votesThen = c.net.votesTo(3)
			return errors.New("waiting for ticks")
		}
		if c.net.votesTo(3) <= votesThen || votesThen == 0 {
			return errors.New("waiting for vote requests to 3")
		}
		return nil
	})
	if c.reps[0].IsLeader() || c.reps[3].Leader() == 0 {
		t.Fatal("broker 0 leads with the joining replica's vote")
	}
	t.Logf("3 was asked for %d votes and gave none", c.net.votesTo(3))
}

// A voter whose disk was replaced reopens joining, with no Raft state: in
// a group whose log was never compacted the leader would send it entries
// from the first, and it would never learn the voters, which are in no
// entry (it could not campaign, and leadership handed to it would stall).
// The leader seals its log instead, and the replica gets the snapshot.
func TestRaftJoiningVoterGetsTheSnapshot(t *testing.T) {
	c := newRaftCluster(t, 3)
	ctx := context.Background()
	for i := range 20 {
		if _, err := c.produce(ctx, fmt.Sprint("v", i)); err != nil {
			t.Fatal(err)
		}
	}
	c.stop(0)
	c.dirs[0] = t.TempDir()
	c.joining = map[int32]bool{0: true}
	c.leader()
	c.start(0)
	waitConf(t, c.reps[0], Conf{Voters: []int32{0, 1, 2}})
	if _, err := c.produce(ctx, "after"); err != nil {
		t.Fatal(err)
	}
	lead := c.leader()
	retryUntil(t, func() error {
		if c.reps[0].HighWatermark() < lead.HighWatermark() {
			return fmt.Errorf("replica 0 at %d, leader at %d", c.reps[0].HighWatermark(), lead.HighWatermark())
		}
		return nil
	})
	if got, want := values(t, c.reps[0]), values(t, lead); !slices.Equal(got, want) {
		t.Fatalf("replica 0 holds %v, the leader %v", got, want)
	}
}
