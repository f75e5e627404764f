package membership

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/serf/serf"

	"github.com/spool-log/spool/internal/fulldisk"
	"github.com/spool-log/spool/internal/retry"
)

// On a full disk a catalog change cannot be saved: it must then not be made
// at all (the caller gets ErrNotDurable), so that the catalog the node acts
// on is always the one its next start loads. A change from a peer is merged
// again once the disk has room.
func TestCatalogChangeAppliedOnlyOnceSaved(t *testing.T) {
	dir := fulldisk.Mount(t, 2<<20)
	log := newTestLogger(t)
	n := startNode(t, log, 1, withDir(dir))
	if _, err := n.CreateTopic(TopicSpec{Name: "kept", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.CreateTopic(TopicSpec{Name: "gone", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}

	disk := fulldisk.Fill(t, dir)
	if _, err := n.DeleteTopic("kept"); !errors.Is(err, ErrNotDurable) {
		t.Fatalf("delete on a full disk: %v, want ErrNotDurable", err)
	}
	if _, ok := n.Topic("kept"); !ok {
		t.Fatal("a delete that was not saved removed the topic from the catalog")
	}
	if _, err := n.CreateTopic(TopicSpec{Name: "new", Partitions: 1, ReplicationFactor: 1}); !errors.Is(err, ErrNotDurable) {
		t.Fatalf("create on a full disk: %v, want ErrNotDurable", err)
	}
	if _, ok := n.Topic("new"); ok {
		t.Fatal("a create that was not saved is in the catalog")
	}
	if _, err := n.AlterTopic("kept", n.GrowPartitions(3, nil)); !errors.Is(err, ErrNotDurable) {
		t.Fatalf("grow on a full disk: %v, want ErrNotDurable", err)
	}
	if e, _ := n.Topic("kept"); e.Partitions != 1 {
		t.Fatalf("a growth that was not saved is in the catalog: %d partitions", e.Partitions)
	}
	// An entry gossiped by a peer: not applied while it cannot be saved...
	peer := TopicEntry{Name: "from-peer", ID: TopicID{1}, Partitions: 1, ReplicationFactor: 1,
		Replicas: [][]int32{{1}}, Lamport: 50, Origin: 2}
	payload, err := json.Marshal(peer)
	if err != nil {
		t.Fatal(err)
	}
	n.handleUserEvent(serf.UserEvent{Name: eventTopic, Payload: payload})
	if _, ok := n.Topic("from-peer"); ok {
		t.Fatal("a peer's entry that was not saved is in the catalog")
	}
	disk.Free(t)
	// ...and applied by the anti-entropy rounds once it can be.
	retry.Run(t, 10*time.Second, func() error {
		if _, ok := n.Topic("from-peer"); !ok {
			return errors.New("from-peer not in the catalog")
		}
		return nil
	})

	// What the node acted on is what its next start loads.
	n.stop()
	c, err := loadCatalog(n.catalogPath)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"kept": true, "gone": false, "from-peer": true}
	for name, live := range want {
		e, ok := c.Get(name)
		if !ok || e.Deleted == live {
			t.Errorf("reloaded catalog: %s present=%v deleted=%v, want live=%v", name, ok, e.Deleted, live)
		}
	}
	if _, ok := c.Get("new"); ok {
		t.Error("reloaded catalog holds the create that failed")
	}
}

// A roster change that cannot be saved is not made: a decommission is
// refused and leaves the roster as it was, a broker seen joining is added
// only once the roster file says so.
func TestRosterChangeAppliedOnlyOnceSaved(t *testing.T) {
	dir := fulldisk.Mount(t, 4<<20)
	log := newTestLogger(t)
	n := startNode(t, log, 1, withDir(dir))
	events, cancel := n.Subscribe()
	defer cancel()
	waitJoin := func(id int32) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case e := <-events:
				if e.Type == EventJoin && e.Member.BrokerID == id {
					return
				}
			case <-timeout:
				t.Fatalf("broker %d never seen joining", id)
			}
		}
	}
	// Broker 7 joins once and dies: a decommission candidate.
	seven := startNode(t, log, 7)
	seven.join(t, n)
	waitJoin(7)
	retry.Run(t, 10*time.Second, func() error {
		if got := n.Roster(); len(got) != 2 {
			return fmt.Errorf("roster %v", got)
		}
		return nil
	})
	seven.stop()
	retry.Run(t, slow(20*time.Second), wantStatus(n.Agent, "node-7", StatusFailed))

	disk := fulldisk.Fill(t, dir)
	if err := n.Decommission(7, false); err == nil {
		t.Fatal("decommission on a full disk succeeded")
	}
	if got := n.Roster(); len(got) != 2 || got[1] != 7 {
		t.Fatalf("roster after a decommission that was not saved: %v, want [1 7]", got)
	}
	// A broker that joins while the disk is full is not in the roster yet.
	eight := startNode(t, log, 8)
	eight.join(t, n)
	waitJoin(8)
	if got := n.Roster(); len(got) != 2 {
		t.Fatalf("roster took an entry it could not save: %v", got)
	}
	disk.Free(t)
	retry.Run(t, 10*time.Second, func() error {
		if got := n.Roster(); len(got) != 3 {
			return fmt.Errorf("roster %v", got)
		}
		return nil
	})
	if err := n.Decommission(7, false); err != nil {
		t.Fatal(err)
	}
	if got := n.Roster(); len(got) != 2 || got[0] != 1 || got[1] != 8 {
		t.Fatalf("roster after the disk has room: %v, want [1 8]", got)
	}
	r, err := loadRoster(n.rosterPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.IDs(); len(got) != 2 || got[1] != 8 {
		t.Fatalf("saved roster: %v, want [1 8]", got)
	}
}

// A node adopts the cluster's id only once it has saved it: on a full disk
// it keeps the id it has (the one its next start would load), and adopts
// the cluster's once the disk has room.
func TestClusterIDAdoptedOnlyOnceSaved(t *testing.T) {
	dir := fulldisk.Mount(t, 2<<20)
	log := newTestLogger(t)
	older := time.Now().Add(-time.Hour)
	a := startNode(t, log, 1, func(c *Config) { c.ClusterID, c.ClusterIDBorn = "the-cluster", older })
	b := startNode(t, log, 2, withDir(dir), func(c *Config) { c.ClusterID, c.ClusterIDBorn = "newcomer", time.Now() })
	events, cancel := b.Subscribe()
	defer cancel()

	disk := fulldisk.Fill(t, dir)
	b.join(t, a)
	timeout := time.After(10 * time.Second)
	for seen := false; !seen; {
		select {
		case e := <-events:
			seen = e.Type == EventJoin && e.Member.BrokerID == 1
		case <-timeout:
			t.Fatal("node 2 never saw node 1 join")
		}
	}
	if got := b.ClusterID(); got != "newcomer" {
		t.Fatalf("node 2 adopted cluster id %q it could not save", got)
	}
	disk.Free(t)
	retry.Run(t, 10*time.Second, func() error {
		if got := b.ClusterID(); got != "the-cluster" {
			return fmt.Errorf("node 2 has %q", got)
		}
		return nil
	})
	c, err := loadClusterID(b.clusterIDPath, b.cfg)
	if err != nil || c.ID != "the-cluster" {
		t.Fatalf("saved cluster id %q (%v), want the-cluster", c.ID, err)
	}
}
