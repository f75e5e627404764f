package membership

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/serf/serf"

	"github.com/spool-log/spool/internal/fulldisk"
	"github.com/spool-log/spool/internal/retry"
)

func testCredential(mechanism string, fill byte) UserCredential {
	size := scramKeySize(mechanism)
	return UserCredential{Mechanism: mechanism, Iterations: 8192, Salt: []byte("salt"),
		StoredKey: bytes.Repeat([]byte{fill}, size), ServerKey: bytes.Repeat([]byte{fill + 1}, size)}
}

func testUserEntry(name, mechanism string, fill byte, lamport uint64, origin int32) UserEntry {
	c := testCredential(mechanism, fill)
	return UserEntry{Name: name, Mechanism: mechanism, Iterations: c.Iterations, Salt: c.Salt,
		StoredKey: c.StoredKey, ServerKey: c.ServerKey, Lamport: lamport, Origin: origin}
}

// Merging is a per (user, mechanism) maximum by version: the order of
// arrival does not matter, a tombstone beats what it deletes, an older
// entry changes nothing and invalid entries are skipped.
func TestUserMergeLastWriterWins(t *testing.T) {
	old := testUserEntry("alice", ScramSHA512, 1, 5, 1)
	newer := testUserEntry("alice", ScramSHA512, 3, 6, 1)
	tie := testUserEntry("alice", ScramSHA512, 5, 6, 2) // same time, higher origin
	tomb := UserEntry{Name: "alice", Mechanism: ScramSHA512, Deleted: true, Lamport: 7, Origin: 1}
	other := testUserEntry("alice", ScramSHA256, 7, 1, 3)
	orders := [][]UserEntry{{old, newer, tie, tomb, other}, {other, tomb, tie, newer, old}, {tie, old, other, tomb, newer}}
	var digests []uint64
	for _, order := range orders {
		c := NewCatalog()
		for _, e := range order {
			if _, err := c.MergeUsers([]UserEntry{e}); err != nil {
				t.Fatal(err)
			}
		}
		got, _ := c.user("alice", ScramSHA512)
		if !got.Deleted || got.Lamport != 7 {
			t.Errorf("order %v: SHA-512 entry %+v, want the tombstone", order, got)
		}
		if got, ok := c.user("alice", ScramSHA256); !ok || got.Deleted {
			t.Errorf("the SHA-256 credential went with the SHA-512 one: %+v", got)
		}
		if c.Clock() != 7 {
			t.Errorf("clock %d, want 7 (the highest time seen)", c.Clock())
		}
		digests = append(digests, c.Digest())
	}
	if digests[0] != digests[1] || digests[1] != digests[2] {
		t.Errorf("digests differ by order of arrival: %x", digests)
	}

	c := NewCatalog()
	if _, err := c.MergeUsers([]UserEntry{newer}); err != nil {
		t.Fatal(err)
	}
	if changed, _ := c.MergeUsers([]UserEntry{old}); len(changed) != 0 {
		t.Errorf("an older entry changed the catalog: %v", changed)
	}
	if changed, _ := c.MergeUsers([]UserEntry{tie}); len(changed) != 1 {
		t.Error("the higher origin at the same time did not win")
	}

	bad := []UserEntry{
		testUserEntry("", ScramSHA512, 1, 1, 1),
		testUserEntry("has space", ScramSHA512, 1, 1, 1),
		testUserEntry("bob", "PLAIN", 1, 1, 1),
		{Name: "bob", Mechanism: ScramSHA256, Deleted: true, StoredKey: []byte{1}, Lamport: 1},
	}
	short := testUserEntry("bob", ScramSHA256, 1, 1, 1)
	short.StoredKey = short.StoredKey[:10]
	few := testUserEntry("bob", ScramSHA256, 1, 1, 1)
	few.Iterations = 4095
	bad = append(bad, short, few)
	for _, e := range bad {
		changed, err := c.MergeUsers([]UserEntry{e})
		if err == nil || !errors.Is(err, ErrInvalidUser) || len(changed) != 0 {
			t.Errorf("invalid entry %+v: changed %v, err %v", e, changed, err)
		}
	}
}

// A catalog without users digests as it did before users existed (old
// and new nodes agree on it), and adding a user changes the digest.
func TestUserDigest(t *testing.T) {
	c := NewCatalog()
	if _, err := c.Merge([]TopicEntry{{Name: "t", ID: TopicID{1}, Partitions: 1, ReplicationFactor: 1, Replicas: [][]int32{{1}}, Lamport: 1, Origin: 1}}); err != nil {
		t.Fatal(err)
	}
	before := c.Digest()
	if _, err := c.MergeUsers(nil); err != nil || c.Digest() != before {
		t.Fatal("merging no users changed the digest")
	}
	if _, err := c.MergeUsers([]UserEntry{testUserEntry("alice", ScramSHA256, 1, 2, 1)}); err != nil {
		t.Fatal(err)
	}
	if c.Digest() == before {
		t.Error("adding a user left the digest unchanged")
	}
}

// A catalog file written before users existed loads, and users survive a
// save and a load.
func TestUserCatalogFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, catalogFile)
	old := `{"clock":3,"topics":[{"name":"t","id":"01000000000000000000000000000000","partitions":1,"replicationFactor":1,"replicas":[[1]],"lamport":3,"origin":1}]}` + "\n"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := loadCatalog(path)
	if err != nil {
		t.Fatalf("load a catalog from before users: %v", err)
	}
	if _, ok := c.Get("t"); !ok || len(c.Users()) != 0 || c.Clock() != 3 {
		t.Fatalf("old catalog loaded as topics %v users %v clock %d", c.Entries(), c.Users(), c.Clock())
	}
	u := testUserEntry("alice", ScramSHA512, 9, 4, 1)
	tomb := UserEntry{Name: "bob", Mechanism: ScramSHA256, Deleted: true, Lamport: 5, Origin: 2}
	if _, err := c.MergeUsers([]UserEntry{u, tomb}); err != nil {
		t.Fatal(err)
	}
	if err := saveCatalog(path, c); err != nil {
		t.Fatal(err)
	}
	back, err := loadCatalog(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Digest() != c.Digest() || back.Clock() != 5 {
		t.Fatalf("reloaded catalog differs: users %+v clock %d", back.Users(), back.Clock())
	}
	got, _ := back.user("alice", ScramSHA512)
	if !bytes.Equal(got.StoredKey, u.StoredKey) || !bytes.Equal(got.ServerKey, u.ServerKey) || !bytes.Equal(got.Salt, u.Salt) || got.Iterations != u.Iterations {
		t.Errorf("reloaded credential %+v, want %+v", got, u)
	}
	if got, _ := back.user("bob", ScramSHA256); !got.Deleted {
		t.Error("the tombstone did not survive a reload")
	}
}

func liveUsers(a *Agent) string {
	var s string
	for _, e := range a.Users() {
		s += fmt.Sprintf("%s/%s@%d ", e.Name, e.Mechanism, e.Lamport)
	}
	return s
}

func sameUsers(nodes ...*testNode) func() error {
	return func() error {
		want := liveUsers(nodes[0].Agent)
		for _, n := range nodes[1:] {
			if got := liveUsers(n.Agent); got != want {
				return fmt.Errorf("%s users %q, %s users %q", nodes[0].cfg.NodeName, want, n.cfg.NodeName, got)
			}
		}
		return sameCatalog(nodes...)()
	}
}

// A user made on one node reaches every node by gossip, a delete made on
// another reaches them too, and an entry only one node holds (its event
// lost) spreads by anti-entropy. Every node keeps what it merged on disk.
func TestUsersSpreadAndPersist(t *testing.T) {
	nodes := cluster(t, 3)
	a, b, c := nodes[0], nodes[1], nodes[2]
	if _, err := a.UpsertUser("alice", testCredential(ScramSHA512, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.UpsertUser("alice", testCredential(ScramSHA256, 2)); err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 10*time.Second, func() error {
		if got := liveUsers(c.Agent); len(c.Users()) != 2 {
			return fmt.Errorf("node 3 users %q", got)
		}
		return sameUsers(a, b, c)()
	})
	if err := b.DeleteUser("alice", ScramSHA256); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteUser("alice", ScramSHA256); !errors.Is(err, ErrUnknownUser) {
		t.Fatalf("second delete: %v, want ErrUnknownUser", err)
	}
	if _, err := b.UpsertUser("bad", UserCredential{Mechanism: ScramSHA256, Iterations: 100}); !errors.Is(err, ErrInvalidUser) {
		t.Fatalf("upsert with 100 iterations: %v, want ErrInvalidUser", err)
	}
	// An entry gossip never carried: only anti-entropy can spread it.
	quiet := testUserEntry("carol", ScramSHA256, 4, a.catalog.tick(), 1)
	if err := a.mergeUsers([]UserEntry{quiet}, "local"); err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 20*time.Second, func() error {
		for _, n := range nodes {
			if got := liveUsers(n.Agent); len(n.Users()) != 2 {
				return fmt.Errorf("%s users %q, want alice/SHA-512 and carol", n.cfg.NodeName, got)
			}
		}
		return sameUsers(a, b, c)()
	})
	c.stop()
	back, err := loadCatalog(c.catalogPath)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := back.user("alice", ScramSHA256); !ok || !e.Deleted {
		t.Errorf("node 3's file: alice SHA-256 %+v, want its tombstone", e)
	}
	if e, ok := back.user("carol", ScramSHA256); !ok || e.Deleted {
		t.Errorf("node 3's file: carol %+v, want live", e)
	}
}

// On a full disk a user change is not made: the caller gets
// ErrNotDurable and the users are as they were; a peer's entry is merged
// once the disk has room.
func TestUserChangeAppliedOnlyOnceSaved(t *testing.T) {
	dir := fulldisk.Mount(t, 2<<20)
	n := startNode(t, newTestLogger(t), 1, withDir(dir))
	if _, err := n.UpsertUser("kept", testCredential(ScramSHA512, 1)); err != nil {
		t.Fatal(err)
	}
	disk := fulldisk.Fill(t, dir)
	if _, err := n.UpsertUser("new", testCredential(ScramSHA512, 1)); !errors.Is(err, ErrNotDurable) {
		t.Fatalf("upsert on a full disk: %v, want ErrNotDurable", err)
	}
	if err := n.DeleteUser("kept", ScramSHA512); !errors.Is(err, ErrNotDurable) {
		t.Fatalf("delete on a full disk: %v, want ErrNotDurable", err)
	}
	if got := liveUsers(n.Agent); len(n.Users()) != 1 || n.Users()[0].Name != "kept" {
		t.Fatalf("users after failed saves: %q, want kept only", got)
	}
	payload, err := json.Marshal(testUserEntry("from-peer", ScramSHA256, 3, 50, 2))
	if err != nil {
		t.Fatal(err)
	}
	n.handleUserEvent(serf.UserEvent{Name: eventUser, Payload: payload})
	if len(n.Users()) != 1 {
		t.Fatal("a peer's user entry that was not saved is in the catalog")
	}
	disk.Free(t)
	retry.Run(t, 10*time.Second, func() error {
		if len(n.Users()) != 2 {
			return fmt.Errorf("users %q, want kept and from-peer", liveUsers(n.Agent))
		}
		return nil
	})
	n.stop()
	back, err := loadCatalog(n.catalogPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(back.Users()); got != 2 {
		t.Errorf("reloaded catalog holds %d users, want 2", got)
	}
}
