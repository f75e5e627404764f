package membership

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

// A move is recorded on one node, reaches every node and its saved
// catalog with Kafka's adding and removing replicas, and its end makes the
// target the replica list everywhere; a bad target changes nothing.
func TestPartitionMoveSpreadsAndEnds(t *testing.T) {
	nodes := cluster(t, 3)
	a, b := nodes[0], nodes[1]
	created, err := a.CreateTopic(TopicSpec{Name: "mv", Partitions: 2, ReplicationFactor: 2, Replicas: [][]int32{{1, 2}, {2, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 5*time.Second, sameCatalog(nodes...))
	for _, bad := range [][]int32{{}, {1, 1}, {1, 9}, {1, 2, 3}, {-1, 2}} {
		if _, err := b.AlterTopic("mv", b.SetMove(1, bad)); !errors.Is(err, ErrMove) {
			t.Errorf("target %v: %v, want ErrMove", bad, err)
		}
	}
	if _, err := b.AlterTopic("mv", b.SetMove(1, []int32{3, 1})); err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 5*time.Second, func() error {
		for _, n := range nodes {
			e, _ := n.Topic("mv")
			m, ok := e.Move(1)
			if !ok || !slices.Equal(m.Target, []int32{3, 1}) || !slices.Equal(e.Adding(1), []int32{1}) || !slices.Equal(e.Removing(1), []int32{2}) {
				return fmt.Errorf("%s sees moves %+v", n.cfg.NodeName, e.Moves)
			}
			if _, ok := e.Move(0); ok {
				return fmt.Errorf("%s sees partition 0 moving", n.cfg.NodeName)
			}
		}
		return nil
	})
	if _, err := a.AlterTopic("mv", EndMove(1, []int32{1, 3})); !errors.Is(err, ErrTopicChanged) {
		t.Fatalf("ending with another list than the target: %v", err)
	}
	if _, err := a.AlterTopic("mv", EndMove(1, []int32{3, 1})); err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 5*time.Second, func() error {
		for _, n := range nodes {
			e, _ := n.Topic("mv")
			if len(e.Moves) != 0 || !slices.Equal(e.Replicas[1], []int32{3, 1}) || e.ID != created.ID {
				return fmt.Errorf("%s sees replicas %v moves %+v", n.cfg.NodeName, e.Replicas, e.Moves)
			}
		}
		return nil
	})
	for _, n := range nodes {
		saved, err := loadCatalog(n.catalogPath)
		if err != nil {
			t.Fatal(err)
		}
		if e, _ := saved.Get("mv"); !slices.Equal(e.Replicas[1], []int32{3, 1}) || len(e.Moves) != 0 {
			t.Errorf("%s saved replicas %v moves %+v", n.cfg.NodeName, e.Replicas, e.Moves)
		}
	}
}

// Automatic moves leave pinned partitions (a manual assignment at create,
// an operator's reassignment) and partitions already moving alone, and do
// not pin what they move.
func TestAutoMoveLeavesPinnedPartitions(t *testing.T) {
	nodes := cluster(t, 3)
	a := nodes[0]
	if _, err := a.CreateTopic(TopicSpec{Name: "pin", Partitions: 3, ReplicationFactor: 2, Replicas: [][]int32{{1, 2}, {2, 3}, {3, 1}}, Pinned: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AlterTopic("pin", a.AutoMove(0, []int32{2, 3})); !errors.Is(err, ErrPinned) {
		t.Fatalf("auto move of a manual assignment: %v", err)
	}
	if _, err := a.CreateTopic(TopicSpec{Name: "free", Partitions: 2, ReplicationFactor: 2, Replicas: [][]int32{{1, 2}, {2, 3}}}); err != nil {
		t.Fatal(err)
	}
	e, err := a.AlterTopic("free", a.AutoMove(0, []int32{1, 3}))
	if err != nil || e.IsPinned(0) {
		t.Fatalf("auto move: %v, pinned %v", err, e.Pinned)
	}
	if _, err := a.AlterTopic("free", a.AutoMove(0, []int32{2, 3})); !errors.Is(err, ErrPinned) {
		t.Fatalf("auto move of a partition moving already: %v", err)
	}
	e, err = a.AlterTopic("free", a.SetMove(1, []int32{3, 1}))
	if err != nil || !e.IsPinned(1) {
		t.Fatalf("an operator's move: %v, pinned %v", err, e.Pinned)
	}
	saved := func() TopicEntry {
		c, err := loadCatalog(a.catalogPath)
		if err != nil {
			t.Fatal(err)
		}
		e, _ := c.Get("free")
		return e
	}
	if got := saved(); !slices.Equal(got.Pinned, []int32{1}) {
		t.Errorf("saved pinned %v, want [1]", got.Pinned)
	}
}

// A cancel acts on the entry it changes: on a move under way it sets the
// target back to the replica list; on an entry whose move ended (the
// canceller's view was stale) it changes nothing, where SetMove with the
// replica list the canceller saw would start a move back.
func TestCancelMoveActsOnTheLatestEntry(t *testing.T) {
	a := cluster(t, 2)[0]
	if _, err := a.CreateTopic(TopicSpec{Name: "cancel", Partitions: 1, ReplicationFactor: 2, Replicas: [][]int32{{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AlterTopic("cancel", a.SetMove(0, []int32{2, 1})); err != nil {
		t.Fatal(err)
	}
	e, err := a.AlterTopic("cancel", CancelMove(0))
	if m, ok := e.Move(0); err != nil || !ok || !slices.Equal(m.Target, []int32{1, 2}) || !e.IsPinned(0) {
		t.Fatalf("cancel under way: %v, moves %+v pinned %v", err, e.Moves, e.Pinned)
	}
	if _, err := a.AlterTopic("cancel", EndMove(0, []int32{1, 2})); err != nil {
		t.Fatal(err)
	}
	// A move to {2,1} runs to its end; a cancel decided on the view from
	// before it ended comes after.
	if _, err := a.AlterTopic("cancel", a.SetMove(0, []int32{2, 1})); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AlterTopic("cancel", EndMove(0, []int32{2, 1})); err != nil {
		t.Fatal(err)
	}
	e, err = a.AlterTopic("cancel", CancelMove(0))
	if err != nil || len(e.Moves) != 0 || !slices.Equal(e.Replicas[0], []int32{2, 1}) {
		t.Fatalf("a cancel after the move ended: %v, replicas %v moves %+v", err, e.Replicas, e.Moves)
	}
}
