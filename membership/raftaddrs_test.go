package membership

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

func withRaftAddr(addr string) nodeOpt { return func(c *Config) { c.RaftAddr = addr } }

// TestLastRaftAddrSurvivesRestart: the Raft addresses gossip carried are
// known after a restart before any rejoin (here: none, the snapshot gone),
// the node's own included; gossip's word replaces a changed one.
func TestLastRaftAddrSurvivesRestart(t *testing.T) {
	log := newTestLogger(t)
	a := startNode(t, log, 1, withRaftAddr("127.0.0.1:9001"))
	b := startNode(t, log, 2, withRaftAddr("127.0.0.1:9002"))
	b.join(t, a)
	retry.Run(t, 5*time.Second, func() error {
		if addr, ok := b.LastRaftAddr(1); !ok || addr != "127.0.0.1:9001" {
			return fmt.Errorf("b's last raft address of 1: %q %v", addr, ok)
		}
		return nil
	})
	dir := b.cfg.DataDir
	b.stop()
	if err := os.Remove(filepath.Join(dir, snapshotFile)); err != nil {
		t.Fatal(err)
	}
	back := startNode(t, log, 2, withDir(dir), withRaftAddr("127.0.0.1:9002"))
	<-back.Rejoined()
	if n := len(back.Members()); n != 1 {
		t.Fatalf("the restarted node sees %d members; the test wants it alone", n)
	}
	if addr, ok := back.LastRaftAddr(1); !ok || addr != "127.0.0.1:9001" {
		t.Fatalf("after a restart without gossip: last raft address of 1 = %q %v", addr, ok)
	}
	if _, ok := back.LastRaftAddr(3); ok {
		t.Fatal("an address for a broker never seen")
	}
	if addr, ok := LastOwnRaftAddr(dir, 2); !ok || addr != "127.0.0.1:9002" {
		t.Fatalf("own last raft address = %q %v", addr, ok)
	}
	back.stop()

	// a moves its Raft port; gossip's new tag replaces the old address.
	a.stop()
	a2 := startNode(t, log, 1, withDir(a.cfg.DataDir), withRaftAddr("127.0.0.1:9011"))
	again := startNode(t, log, 2, withDir(dir), withRaftAddr("127.0.0.1:9002"))
	again.join(t, a2)
	retry.Run(t, 5*time.Second, func() error {
		if addr, _ := again.LastRaftAddr(1); addr != "127.0.0.1:9011" {
			return fmt.Errorf("last raft address of 1 after it moved: %q", addr)
		}
		return nil
	})
}

// TestRaftAddrBookDamaged: an unreadable book is a hint lost, not a node
// that cannot start.
func TestRaftAddrBookDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), raftAddrsFile)
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := loadRaftAddrs(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.lookup(1); ok {
		t.Fatal("an entry from a damaged file")
	}
	if !b.observe(1, "n1", "127.0.0.1:1") || b.observe(1, "n1", "127.0.0.1:1") {
		t.Fatal("observe: want a change, then none")
	}
	if err := b.save(); err != nil {
		t.Fatal(err)
	}
	again, err := loadRaftAddrs(path)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := again.lookup(1); !ok || e.Addr != "127.0.0.1:1" {
		t.Fatalf("reloaded: %+v %v", e, ok)
	}
}
