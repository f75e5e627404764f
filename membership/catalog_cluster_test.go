package membership

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

func sameCatalog(nodes ...*testNode) func() error {
	return func() error {
		want := nodes[0].Digest()
		for _, n := range nodes[1:] {
			if got := n.Digest(); got != want {
				return fmt.Errorf("%s digest %x, %s digest %x (%d vs %d entries)", nodes[0].cfg.NodeName, want,
					n.cfg.NodeName, got, len(nodes[0].CatalogSnapshot().Topics), len(n.CatalogSnapshot().Topics))
			}
		}
		return nil
	}
}

func cluster(t *testing.T, size int) []*testNode {
	t.Helper()
	log := newTestLogger(t)
	nodes := make([]*testNode, size)
	for i := range nodes {
		nodes[i] = startNode(t, log, int32(i+1))
		if i > 0 {
			nodes[i].join(t, nodes[0])
		}
	}
	for _, n := range nodes {
		retry.Run(t, 5*time.Second, func() error {
			if got := len(n.Roster()); got != size {
				return fmt.Errorf("%s roster %v", n.cfg.NodeName, n.Roster())
			}
			if got := aliveCount(n.Agent); got != size {
				return fmt.Errorf("%s sees %d alive", n.cfg.NodeName, got)
			}
			return nil
		})
	}
	return nodes
}

func TestCatalogSpreadsAndPersists(t *testing.T) {
	nodes := cluster(t, 3)
	a, b, c := nodes[0], nodes[1], nodes[2]
	changes, cancel := c.WatchTopics()
	defer cancel()

	small, err := a.CreateTopic(TopicSpec{Name: "orders", Partitions: 6, ReplicationFactor: 3, Config: map[string]string{"cleanup.policy": "delete"}})
	if err != nil {
		t.Fatal(err)
	}
	placed := PlaceTopic("orders", 6, []int32{1, 2, 3}, 3)
	for p, rs := range small.Replicas {
		if want := placed[p]; fmt.Sprint(rs) != fmt.Sprint(want) {
			t.Fatalf("partition %d replicas %v, want PlaceTopic's %v", p, rs, want)
		}
	}
	// Too big for one user event: spread by a hint and a pull.
	big, err := b.CreateTopic(TopicSpec{Name: "clicks", Partitions: 500, ReplicationFactor: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(TopicSpec{Name: "orders", Partitions: 1, ReplicationFactor: 1}); err == nil {
		// c may not have seen "orders" yet; then this is a concurrent create
		// and the catalogs still converge below.
		t.Log("c created orders before hearing of a's")
	}
	if _, err := a.CreateTopic(TopicSpec{Name: "bad", Partitions: 1, ReplicationFactor: 4}); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Fatalf("replication factor over the roster: %v", err)
	}
	// A caller that placed the topic itself keeps its id and replicas.
	given := TopicSpec{Name: "given", Partitions: 2, ReplicationFactor: 2, ID: TopicID{0x42}, Replicas: [][]int32{{3, 1}, {2, 3}}}
	if got, err := a.CreateTopic(given); err != nil || got.ID != given.ID || fmt.Sprint(got.Replicas) != "[[3 1] [2 3]]" {
		t.Fatalf("create with given placement: %v %v", got, err)
	}
	for _, bad := range [][][]int32{{{1}, {2}}, {{1, 1}, {2, 3}}, {{1, 2}}} {
		spec := given
		spec.Name, spec.Replicas = "given-bad", bad
		if _, err := a.CreateTopic(spec); err == nil {
			t.Fatalf("accepted replicas %v", bad)
		}
	}
	retry.Run(t, 10*time.Second, sameCatalog(a, b, c))
	for _, n := range nodes {
		if got, ok := n.Topic("clicks"); !ok || got.ID != big.ID || len(got.Replicas) != 500 {
			t.Fatalf("%s: clicks = %v %v", n.cfg.NodeName, ok, got.ID)
		}
	}

	if gone, err := b.DeleteTopic("clicks"); err != nil || gone.ID != big.ID || gone.Deleted {
		t.Fatalf("delete returned %v, %v; want the live entry it deleted", gone.ID, err)
	}
	if _, err := b.DeleteTopic("clicks"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("second delete: %v", err)
	}
	retry.Run(t, 10*time.Second, func() error {
		for _, n := range nodes {
			if _, ok := n.Topic("clicks"); ok {
				return fmt.Errorf("%s still has clicks", n.cfg.NodeName)
			}
		}
		return sameCatalog(a, b, c)()
	})

	// c's watcher saw clicks come and go.
	var sawCreate, sawDelete bool
	retry.Run(t, 5*time.Second, func() error {
		for {
			select {
			case ch := <-changes:
				if ch.New.Name == "clicks" && !ch.New.Deleted && ch.New.ID == big.ID {
					sawCreate = true
				}
				if ch.New.Name == "clicks" && ch.New.Deleted && ch.New.ID == big.ID {
					sawDelete = true
				}
				continue
			default:
			}
			break
		}
		if !sawCreate || !sawDelete {
			return fmt.Errorf("create seen %v, delete seen %v", sawCreate, sawDelete)
		}
		return nil
	})

	// The catalog survives a restart.
	digest := c.Digest()
	c.stop()
	c2 := startNode(t, newTestLogger(t), 3, withDir(c.cfg.DataDir))
	if c2.Digest() != digest {
		t.Fatalf("catalog after restart: digest %x, want %x", c2.Digest(), digest)
	}
}

// TestConcurrentConflictingCreates creates one name on two nodes that cannot
// hear each other yet, then joins them: every node must settle on the same
// entry, the one with the higher (Lamport, origin).
func TestConcurrentConflictingCreates(t *testing.T) {
	log := newTestLogger(t)
	a := startNode(t, log, 1)
	b := startNode(t, log, 2)
	c := startNode(t, log, 3)
	c.join(t, b)
	// b places over its roster, which takes c once it is saved.
	retry.Run(t, 10*time.Second, func() error {
		if got := b.Roster(); len(got) != 2 {
			return fmt.Errorf("b's roster %v", got)
		}
		return nil
	})
	watch, cancel := a.WatchTopics()
	defer cancel()

	fromA, err := a.CreateTopic(TopicSpec{Name: "clash", Partitions: 3, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	fromB, err := b.CreateTopic(TopicSpec{Name: "clash", Partitions: 2, ReplicationFactor: 2})
	if err != nil {
		t.Fatal(err)
	}
	winner := fromA
	if fromB.newerThan(fromA) {
		winner = fromB
	}
	b.join(t, a)
	retry.Run(t, 10*time.Second, sameCatalog(a, b, c))
	for _, n := range []*testNode{a, b, c} {
		got, _ := n.Topic("clash")
		if got.ID != winner.ID {
			t.Fatalf("%s kept %v, want the winner %v", n.cfg.NodeName, got.ID, winner.ID)
		}
	}
	if winner.ID == fromB.ID {
		// a must have been told its own entry was replaced.
		retry.Run(t, 5*time.Second, func() error {
			for {
				select {
				case ch := <-watch:
					if ch.Old != nil && ch.Old.ID == fromA.ID && ch.New.ID == fromB.ID {
						return nil
					}
					continue
				default:
				}
				return errors.New("no TopicChange from a's entry to b's")
			}
		})
	}

	// Racing creates inside a connected cluster converge too.
	var wg sync.WaitGroup
	for _, n := range []*testNode{a, b, c} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = n.CreateTopic(TopicSpec{Name: "race", Partitions: 4, ReplicationFactor: 3})
		}()
	}
	wg.Wait()
	retry.Run(t, 10*time.Second, sameCatalog(a, b, c))
}

func TestLateJoinerLearnsAllTopics(t *testing.T) {
	nodes := cluster(t, 2)
	a, b := nodes[0], nodes[1]
	for i := 0; i < 20; i++ {
		creator := nodes[i%2]
		if _, err := creator.CreateTopic(TopicSpec{Name: fmt.Sprintf("t%02d", i), Partitions: int32(1 + i%4), ReplicationFactor: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.CreateTopic(TopicSpec{Name: "huge", Partitions: 2000, ReplicationFactor: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.DeleteTopic("t03"); err != nil {
		retry.Run(t, 5*time.Second, func() error {
			_, err = b.DeleteTopic("t03")
			return err
		})
	}
	retry.Run(t, 10*time.Second, sameCatalog(a, b))

	late := startNode(t, newTestLogger(t), 3)
	late.join(t, b)
	retry.Run(t, 10*time.Second, sameCatalog(a, b, late))
	if got, want := len(late.Topics()), 20; got != want {
		t.Fatalf("late joiner has %d live topics, want %d", got, want)
	}
	if _, ok := late.Topic("t03"); ok {
		t.Fatal("late joiner resurrected a deleted topic")
	}
}
