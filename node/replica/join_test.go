package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/spool-log/spool/partition"
	pb "go.etcd.io/raft/v3/raftpb"
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
	c.addLearner(t, 3)
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

// A restart applies from the persisted commit, which may be past what was
// applied before the crash: a change adding a learner replayed then must
// seal the log as its first apply would have (applyConf). The crash is
// made by the group itself: a command entry this node does not know,
// committed with the change after it, stops the group at the command, the
// commit already saved.
func TestRaftRestartReplaysALearnersSeal(t *testing.T) {
	c := newRaftCluster(t, 3)
	ctx := context.Background()
	for i := range 5 {
		if _, err := c.produce(ctx, fmt.Sprint("v", i)); err != nil {
			t.Fatal(err)
		}
	}
	lead := c.leader()
	g := lead.rg
	g.mu.Lock()
	if err := g.rn.Propose([]byte{0xFF, 'X'}); err != nil {
		t.Fatal(err)
	}
	if err := g.rn.ProposeConfChange(&pb.ConfChangeV2{Changes: []*pb.ConfChangeSingle{
		{Type: pb.ConfChangeAddLearnerNode.Enum(), NodeId: new(RaftID(3))}}}); err != nil {
		t.Fatal(err)
	}
	g.mu.Unlock()
	g.w.kick(g)
	retryUntil(t, func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.broken == nil {
			return errors.New("the leader has not applied the unknown command yet")
		}
		return nil
	})
	hs, _, _ := g.st.InitialState()
	adds := learnerAdds(g, hs.GetCommit())
	if len(adds) != 1 {
		t.Fatalf("%d changes adding a learner committed above the snapshot, want 1 (commit %d)", len(adds), hs.GetCommit())
	}
	if cf, _ := lead.Conf(); slices.Contains(cf.Learners, 3) {
		t.Fatal("the change was applied before the crash: nothing to replay")
	}
	id := lead.self
	c.stop(id)
	c.start(id)
	r := c.reps[id]
	if cf, _ := r.Conf(); !slices.Contains(cf.Learners, 3) {
		t.Fatalf("restarted: configuration %+v, want learner 3", cf)
	}
	if got := r.rg.st.SnapshotIndex(); got < adds[0] {
		t.Fatalf("restarted: snapshot at %d, below the replayed learner's change at %d", got, adds[0])
	}
}

// learnerAdds are the indexes of the changes adding a learner in g's log
// above its snapshot up to hi.
func learnerAdds(g *raftGroup, hi uint64) []uint64 {
	var out []uint64
	for _, e := range g.st.ConfEntries(g.st.SnapshotIndex()+1, hi) {
		cc, err := confChangeOf(e)
		if err != nil {
			continue
		}
		for _, ch := range cc.GetChanges() {
			if ch.GetType() == pb.ConfChangeAddLearnerNode {
				out = append(out, e.GetIndex())
			}
		}
	}
	return out
}

// A voter whose disk was replaced and that reopens with the replica list
// (no move under way) refuses the leader's appends from above its empty
// log; the leader, which remembers it holding more, seals past that so
// the replica gets the snapshot rather than probes above its end forever.
func TestRaftVoterWithALostLogCatchesUp(t *testing.T) {
	c := newRaftCluster(t, 3)
	ctx := context.Background()
	for i := range 20 {
		if _, err := c.produce(ctx, fmt.Sprint("v", i)); err != nil {
			t.Fatal(err)
		}
	}
	lead := c.leader()
	var lost int32 = -1
	for _, id := range c.ids {
		if c.reps[id] != lead {
			lost = id
			break
		}
	}
	c.stop(lost)
	c.dirs[lost] = t.TempDir()
	c.start(lost)
	if _, err := c.produce(ctx, "after"); err != nil {
		t.Fatal(err)
	}
	lead = c.leader()
	retry := func() error {
		if c.reps[lost].HighWatermark() < lead.HighWatermark() {
			return fmt.Errorf("replica %d at %d, leader at %d", lost, c.reps[lost].HighWatermark(), lead.HighWatermark())
		}
		return nil
	}
	retryUntil(t, retry)
	if got, want := values(t, c.reps[lost]), values(t, lead); !slices.Equal(got, want) {
		t.Fatalf("replica %d holds %v, the leader %v", lost, got, want)
	}
}

// A replica of a new group's list whose node opens it only once the group
// has had a leader opens joining (its node cannot tell it never held
// state). The leader, elected on an empty log, never heard from it, so its
// first append to it starts at the group's first entry, which an empty log
// matches. Taking it, the joiner would hold entries with no configuration
// (the starting voters are only in the bootstrap snapshot), and the next
// change it applied would stop raft ("removed all voters"), and the node
// with it. It refuses the append, and gets the snapshot.
func TestRaftLateJoinerOfANewGroupGetsTheSnapshot(t *testing.T) {
	c := newRaftClusterLater(t, 3, partition.DefaultConfig(), nil, 2)
	ctx := context.Background()
	for i := range 5 {
		if _, err := c.produce(ctx, fmt.Sprint("v", i)); err != nil {
			t.Fatal(err)
		}
	}
	c.joining = map[int32]bool{2: true}
	c.start(2)
	// A write wakes the group (idle, it sends nothing), and the leader
	// sends the joiner what it has from the first entry.
	if _, err := c.produce(ctx, "after"); err != nil {
		t.Fatal(err)
	}
	waitConf(t, c.reps[2], Conf{Voters: []int32{0, 1, 2}})
	// A change the joiner applies: with entries but no configuration it
	// would panic here.
	c.addLearner(t, 3)
	waitConf(t, c.reps[2], Conf{Voters: []int32{0, 1, 2}, Learners: []int32{3}})
	lead := c.leader()
	retryUntil(t, func() error {
		if c.reps[2].HighWatermark() < lead.HighWatermark() {
			return fmt.Errorf("replica 2 at %d, leader at %d", c.reps[2].HighWatermark(), lead.HighWatermark())
		}
		return nil
	})
	if got, want := values(t, c.reps[2]), values(t, lead); !slices.Equal(got, want) {
		t.Fatalf("replica 2 holds %v, the leader %v", got, want)
	}
}
