package membership

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

func TestRosterMergeAndDecommission(t *testing.T) {
	log := newTestLogger(t)
	// a+b form a cluster and c another; joining merges the rosters.
	a := startNode(t, log, 1)
	b := startNode(t, log, 2)
	c := startNode(t, log, 3)
	b.join(t, a)
	c.join(t, b)
	wantRoster := func(want string, nodes ...*testNode) func() error {
		return func() error {
			for _, n := range nodes {
				if got := fmt.Sprint(n.Roster()); got != want {
					return fmt.Errorf("%s roster %s, want %s", n.cfg.NodeName, got, want)
				}
			}
			d := nodes[0].RosterDigest()
			for _, n := range nodes {
				if n.RosterDigest() != d || n.Local().RosterDigest != d {
					return fmt.Errorf("%s digest/tag not settled", n.cfg.NodeName)
				}
			}
			return nil
		}
	}
	retry.Run(t, 10*time.Second, wantRoster("[1 2 3]", a, b, c))

	// Failed and left members stay in the roster.
	if err := c.Leave(); err != nil {
		t.Fatal(err)
	}
	c.stop()
	retry.Run(t, 5*time.Second, wantStatus(a.Agent, "node-3", StatusLeft))
	if got := fmt.Sprint(a.Roster()); got != "[1 2 3]" {
		t.Fatalf("leaving changed the roster: %s", got)
	}

	// A live broker is drained (out of placement) until cancelled.
	if err := a.Decommission(2, false); err != nil {
		t.Fatalf("decommission of a live broker: %v", err)
	}
	retry.Run(t, 10*time.Second, wantRoster("[1 3]", a, b))
	if err := b.CancelDecommission(2); err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 10*time.Second, wantRoster("[1 2 3]", a, b))

	// Broker 3 holds nothing: its drain is over at once, and the node
	// that starts moves (node/moves: starts.go) removes it.
	if err := a.Decommission(3, false); err != nil {
		t.Fatal(err)
	}
	if done, err := a.FinishDrain(3); !done || err != nil {
		t.Fatalf("finish the drain of an empty broker: %v %v", done, err)
	}
	if err := a.CancelDecommission(3); !errors.Is(err, ErrDecommissioned) {
		t.Fatalf("cancel after the removal: %v", err)
	}
	// b still holds 3 alive at the same generation; merging must not bring
	// it back anywhere.
	retry.Run(t, 10*time.Second, wantRoster("[1 2]", a, b))

	// A node that never saw broker 3 learns the tombstone with the roster,
	// and placement no longer uses 3.
	d := startNode(t, log, 4)
	d.join(t, a)
	retry.Run(t, 10*time.Second, wantRoster("[1 2 4]", a, b, d))
	var tomb bool
	for _, e := range d.RosterEntries() {
		tomb = tomb || e.ID == 3 && e.Decommissioned
	}
	if !tomb {
		t.Fatalf("newcomer lacks the tombstone of 3: %+v", d.RosterEntries())
	}
	e, err := d.CreateTopic(TopicSpec{Name: "after", Partitions: 16, ReplicationFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range e.Replicas {
		for _, id := range rs {
			if id == 3 {
				t.Fatalf("decommissioned broker placed: %v", e.Replicas)
			}
		}
	}

	// Rebooting broker 3 (a new generation) is the way back in.
	c2 := startNode(t, log, 3, withDir(c.cfg.DataDir))
	if c2.Generation() != 2 {
		t.Fatalf("generation %d", c2.Generation())
	}
	c2.join(t, a)
	retry.Run(t, 10*time.Second, wantRoster("[1 2 3 4]", a, b, c2, d))
}

// A drained broker that a cancelled move may still hold as a voter (the
// cancel came after its promotion, so neither the replica list nor the
// target names it) leaves the roster only once the move has ended.
func TestFinishDrainWaitsForMovesUnderWay(t *testing.T) {
	log := newTestLogger(t)
	a := startNode(t, log, 1)
	b := startNode(t, log, 2)
	c := startNode(t, log, 3)
	b.join(t, a)
	c.join(t, a)
	retry.Run(t, 10*time.Second, func() error {
		return retry.Check(fmt.Sprint(a.Roster()) == "[1 2 3]", "roster %v", a.Roster())
	})
	if _, err := a.CreateTopic(TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 2, Replicas: [][]int32{{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AlterTopic("t", a.SetMove(0, []int32{1, 3})); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AlterTopic("t", CancelMove(0)); err != nil {
		t.Fatal(err)
	}
	if err := a.Decommission(3, false); err != nil {
		t.Fatal(err)
	}
	if st := a.DrainProgress(3); st.Done || st.MovesElsewhere != 1 {
		t.Fatalf("drain with a cancelled move under way: %+v", st)
	}
	if done, err := a.FinishDrain(3); done || err != nil {
		t.Fatalf("removed while a move that may hold it as a voter is under way: %v %v", done, err)
	}
	if _, err := a.AlterTopic("t", EndMove(0, []int32{1, 2})); err != nil {
		t.Fatal(err)
	}
	if done, err := a.FinishDrain(3); !done || err != nil {
		t.Fatalf("finish once the move ended: %v %v", done, err)
	}
}
