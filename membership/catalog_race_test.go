package membership

import (
	"errors"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

// knowEachOther puts every node's broker id in every roster, as a cluster
// whose members have met would have, without connecting their gossip: the
// nodes place topics identically but cannot hear each other's creates.
func knowEachOther(nodes ...*testNode) {
	for _, n := range nodes {
		for _, m := range nodes {
			n.roster.Add(m.cfg.BrokerID, m.Generation())
		}
	}
}

// TestConcurrentAutoCreatesAreOneTopic is the create race of a node that has
// not yet heard of a topic created a moment ago elsewhere: both nodes create
// it with the same spec. The creates must be the same topic (same id, same
// replicas), so that joining the two changes no topic id and deletes no
// partition.
func TestConcurrentAutoCreatesAreOneTopic(t *testing.T) {
	log := newTestLogger(t)
	a := startNode(t, log, 1)
	b := startNode(t, log, 2)
	knowEachOther(a, b)
	watchA, cancelA := a.WatchTopics()
	defer cancelA()
	watchB, cancelB := b.WatchTopics()
	defer cancelB()

	spec := TopicSpec{Name: "orders", Partitions: 4, ReplicationFactor: 1, Auto: true}
	fromA, err := a.CreateTopic(spec)
	if err != nil {
		t.Fatal(err)
	}
	fromB, err := b.CreateTopic(spec)
	if err != nil {
		t.Fatal(err)
	}
	if fromA.ID != fromB.ID {
		t.Fatalf("concurrent creates of one spec got ids %v and %v", fromA.ID, fromB.ID)
	}
	for p := range fromA.Replicas {
		if !equalInt32s(fromA.Replicas[p], fromB.Replicas[p]) {
			t.Fatalf("partition %d placed on %v by a, %v by b", p, fromA.Replicas[p], fromB.Replicas[p])
		}
	}

	b.join(t, a)
	retry.Run(t, 10*time.Second, sameCatalog(a, b))
	for _, w := range []<-chan TopicChange{watchA, watchB} {
	drain:
		for {
			select {
			case ch := <-w:
				if ch.Old != nil && ch.Old.ID != ch.New.ID {
					t.Fatalf("merge replaced topic %v by %v: the loser's partitions would be deleted", ch.Old.ID, ch.New.ID)
				}
			default:
				break drain
			}
		}
	}
	got, _ := a.Topic("orders")
	if got.ID != fromA.ID {
		t.Fatalf("converged on id %v, want %v", got.ID, fromA.ID)
	}
}

// TestRecreateGetsNewID: a delete and a create of the same name and spec
// make a new topic, and a create that replaces an older tombstone differs
// from one that replaces a newer one.
func TestRecreateGetsNewID(t *testing.T) {
	a := startNode(t, newTestLogger(t), 1)
	spec := TopicSpec{Name: "logs", Partitions: 2, ReplicationFactor: 1}
	first, err := a.CreateTopic(spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateTopic(spec); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("second create: %v, want ErrTopicExists", err)
	}
	seen := map[TopicID]bool{first.ID: true}
	for i := 0; i < 3; i++ {
		if _, err := a.DeleteTopic("logs"); err != nil {
			t.Fatal(err)
		}
		again, err := a.CreateTopic(spec)
		if err != nil {
			t.Fatal(err)
		}
		if seen[again.ID] {
			t.Fatalf("re-create %d reused id %v", i, again.ID)
		}
		seen[again.ID] = true
	}
	other := deriveTopicID(TopicSpec{Name: "logs", Partitions: 3, ReplicationFactor: 1}, TopicEntry{})
	if other == first.ID {
		t.Fatal("a different partition count derived the same id")
	}
}

// TestConcurrentCreateOrder: at one Lamport time an explicit create beats an
// automatic one whatever the origins, and a delete made after one of two
// concurrent creates beats the other as well, however far ahead its
// creator's clock was.
func TestConcurrentCreateOrder(t *testing.T) {
	explicit := TopicEntry{Name: "t", ID: TopicID{1}, Partitions: 1, ReplicationFactor: 1, Replicas: [][]int32{{1}}, Lamport: 1, Origin: 1}
	auto := TopicEntry{Name: "t", ID: TopicID{2}, Partitions: 1, ReplicationFactor: 1, Replicas: [][]int32{{2}}, Lamport: 1, Origin: 2, Auto: true}
	for _, order := range [][]TopicEntry{{explicit, auto}, {auto, explicit}} {
		c := NewCatalog()
		if _, err := c.Merge(order); err != nil {
			t.Fatal(err)
		}
		if got, _ := c.Get("t"); got.ID != explicit.ID {
			t.Fatalf("auto-create beat an explicit one: kept %v", got.ID)
		}
	}

	log := newTestLogger(t)
	a := startNode(t, log, 1)
	b := startNode(t, log, 2)
	knowEachOther(a, b)
	// b's clock runs far ahead of a's.
	for i := 0; i < 50; i++ {
		b.catalog.tick()
	}
	spec := TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 1, Auto: true}
	if _, err := a.CreateTopic(spec); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	fromB, err := b.CreateTopic(spec) // b never saw a's create or delete
	if err != nil {
		t.Fatal(err)
	}
	b.join(t, a)
	retry.Run(t, 10*time.Second, sameCatalog(a, b))
	if got, ok := a.Topic("t"); ok {
		t.Fatalf("b's stale create %v (id %v) resurrected the deleted topic as %v", fromB.Lamport, fromB.ID, got.ID)
	}
}

func equalInt32s(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
