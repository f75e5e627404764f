package membership

import (
	"errors"
	"path/filepath"
	"testing"
)

func entry(name string, lamport uint64, origin int32, idByte byte) TopicEntry {
	return TopicEntry{
		Name: name, ID: TopicID{idByte}, Partitions: 2, ReplicationFactor: 1,
		Replicas: [][]int32{{origin}, {origin}}, Lamport: lamport, Origin: origin,
	}
}

func TestCatalogConflictingCreatesConverge(t *testing.T) {
	fromA := entry("orders", 5, 1, 0xa)
	fromB := entry("orders", 5, 2, 0xb) // same Lamport time: origin 2 wins
	x, y := NewCatalog(), NewCatalog()
	if _, err := x.Merge([]TopicEntry{fromA}); err != nil {
		t.Fatal(err)
	}
	changes, err := x.Merge([]TopicEntry{fromB})
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].Old == nil || changes[0].Old.ID != fromA.ID || changes[0].New.ID != fromB.ID {
		t.Fatalf("replacement not reported: %+v", changes)
	}
	if _, err := y.Merge([]TopicEntry{fromB, fromA}); err != nil {
		t.Fatal(err)
	}
	if x.Digest() != y.Digest() {
		t.Fatal("catalogs diverge with arrival order")
	}
	got, _ := y.Get("orders")
	if got.ID != fromB.ID {
		t.Fatalf("winner %v, want origin 2's entry", got.ID)
	}
	if y.Clock() != 5 {
		t.Fatalf("clock %d did not witness the merged entry", y.Clock())
	}
}

func TestCatalogTombstoneOrdering(t *testing.T) {
	c := NewCatalog()
	create := entry("logs", 3, 1, 1)
	tomb := TopicEntry{Name: "logs", ID: create.ID, Deleted: true, Lamport: 4, Origin: 2}
	recreate := entry("logs", 6, 3, 2)
	if _, err := c.Merge([]TopicEntry{tomb, create}); err != nil {
		t.Fatal(err)
	}
	if e, _ := c.Get("logs"); !e.Deleted {
		t.Fatal("an older create beat the tombstone")
	}
	if _, err := c.Merge([]TopicEntry{recreate}); err != nil {
		t.Fatal(err)
	}
	if e, _ := c.Get("logs"); e.Deleted || e.ID != recreate.ID {
		t.Fatal("a newer create lost to the tombstone")
	}
}

func TestCatalogRejectsInvalidEntries(t *testing.T) {
	c := NewCatalog()
	bad := []TopicEntry{
		entry("../etc", 1, 1, 1),
		{Name: "x", ID: TopicID{1}, Partitions: 2, ReplicationFactor: 1, Replicas: [][]int32{{1}}, Lamport: 1},
		{Name: "y", ID: TopicID{1}, Partitions: 1, ReplicationFactor: 2, Replicas: [][]int32{{1, 1}}, Lamport: 1},
		{Name: "z", ID: TopicID{1}, Partitions: MaxPartitions + 1, ReplicationFactor: 1, Lamport: 1},
		{Name: "w", Partitions: 1, ReplicationFactor: 1, Replicas: [][]int32{{1}}, Lamport: 1},
	}
	good := entry("fine", 1, 1, 1)
	changes, err := c.Merge(append(bad, good))
	if err == nil {
		t.Fatal("invalid entries accepted without error")
	}
	if len(changes) != 1 || changes[0].New.Name != "fine" || len(c.Entries()) != 1 {
		t.Fatalf("want only the valid entry applied, got %+v", c.Entries())
	}
	for _, name := range []string{"", ".", "..", "a b", "a/b", string(make([]byte, 250))} {
		if err := ValidateTopicName(name); !errors.Is(err, ErrInvalidTopic) {
			t.Errorf("ValidateTopicName(%q) = %v", name, err)
		}
	}
}

func TestCatalogPersistence(t *testing.T) {
	c := NewCatalog()
	e := entry("orders", 9, 1, 7)
	e.Config = map[string]string{"retention.ms": "1000"}
	if _, err := c.Merge([]TopicEntry{e, {Name: "gone", ID: TopicID{3}, Deleted: true, Lamport: 11, Origin: 2}}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "catalog.json")
	if err := saveCatalog(path, c); err != nil {
		t.Fatal(err)
	}
	back, err := loadCatalog(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Digest() != c.Digest() || back.Clock() != 11 {
		t.Fatalf("reloaded catalog differs (clock %d)", back.Clock())
	}
	got, _ := back.Get("orders")
	if got.Config["retention.ms"] != "1000" {
		t.Fatal("config lost")
	}
}

func TestLeaderSelection(t *testing.T) {
	live := map[int32]Member{2: {BrokerID: 2}, 3: {BrokerID: 3}}
	if l, ok := Leader([]int32{1, 3, 2}, live); !ok || l != 3 {
		t.Fatalf("Leader = %d %v, want 3", l, ok)
	}
	if _, ok := Leader([]int32{1, 4}, live); ok {
		t.Fatal("Leader found among dead replicas")
	}
	if _, ok := PreferredLeader([]int32{1, 3}, live); ok {
		t.Fatal("PreferredLeader moved past a dead first replica")
	}
	if l, ok := PreferredLeader([]int32{2, 1}, live); !ok || l != 2 {
		t.Fatalf("PreferredLeader = %d %v", l, ok)
	}
}

func TestCatalogPartitionLookup(t *testing.T) {
	c := NewCatalog()
	e := entry("orders", 1, 3, 7)
	if _, err := c.Merge([]TopicEntry{e}); err != nil {
		t.Fatal(err)
	}
	id, replicas, ok := c.partition("orders", 1)
	if !ok || id != e.ID || len(replicas) != 1 || replicas[0] != 3 {
		t.Fatalf("partition(orders, 1) = %v %v %v, want %v [3] true", id, replicas, ok, e.ID)
	}
	// The list is the catalog's own, read-only; a newer entry replaces the
	// old one whole, so a list handed out earlier never changes under its
	// holder.
	newer := entry("orders", 2, 1, 7) // later, and older than the tombstone below
	newer.Replicas = [][]int32{{5}, {5}}
	if _, err := c.Merge([]TopicEntry{newer}); err != nil {
		t.Fatal(err)
	}
	if _, again, _ := c.partition("orders", 1); again[0] != 5 {
		t.Fatalf("after a newer entry: replicas %v, want [5]", again)
	}
	if replicas[0] != 3 {
		t.Fatalf("a list handed out before the merge changed to %v", replicas)
	}
	for _, index := range []int32{-1, 2} {
		if _, _, ok := c.partition("orders", index); ok {
			t.Fatalf("partition(orders, %d) found a partition that does not exist", index)
		}
	}
	if _, _, ok := c.partition("unknown", 0); ok {
		t.Fatal("partition found an unknown topic")
	}
	if _, err := c.Merge([]TopicEntry{{Name: "orders", ID: e.ID, Deleted: true, Lamport: 2, Origin: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := c.partition("orders", 0); ok {
		t.Fatal("partition found a deleted topic")
	}
}
