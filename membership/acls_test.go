package membership

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

func testACL(name, principal string) ACLBinding {
	return ACLBinding{ResourceType: ACLResourceTopic, ResourceName: name, PatternType: ACLPatternLiteral,
		Principal: principal, Host: "*", Operation: 3, Permission: ACLPermissionAllow}
}

// ACL entries merge as users do: per binding the newest version wins
// whatever the order, a tombstone beats a create of the same time and
// origin, invalid entries are skipped, and the digest moves with them.
func TestACLMergeLastWriterWins(t *testing.T) {
	b := testACL("t", "User:alice")
	live := ACLEntry{ACLBinding: b, Lamport: 5, Origin: 1}
	tomb := ACLEntry{ACLBinding: b, Deleted: true, Lamport: 5, Origin: 1}
	again := ACLEntry{ACLBinding: b, Lamport: 6, Origin: 2}
	other := ACLEntry{ACLBinding: testACL("u", "User:bob"), Lamport: 1, Origin: 3}
	bad := ACLEntry{ACLBinding: ACLBinding{ResourceType: 1, ResourceName: "x", PatternType: 2, Principal: "User:x", Host: "*", Operation: 1, Permission: 1}, Lamport: 9}
	var digests []uint64
	for _, order := range [][]ACLEntry{{live, tomb, again, other}, {again, other, tomb, live}, {other, tomb, live, again}} {
		c := NewCatalog()
		empty := c.Digest()
		for _, e := range order {
			if _, err := c.MergeACLs([]ACLEntry{e}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.MergeACLs([]ACLEntry{bad}); !errors.Is(err, ErrInvalidACL) {
			t.Errorf("merge of ANY codes: %v, want ErrInvalidACL", err)
		}
		if got, _ := c.acl(b); got != again {
			t.Errorf("order %v: %+v, want %+v", order, got, again)
		}
		if c.Clock() != 6 || c.Digest() == empty {
			t.Errorf("clock %d (want 6), digest unchanged %v", c.Clock(), c.Digest() == empty)
		}
		digests = append(digests, c.Digest())
	}
	if digests[0] != digests[1] || digests[1] != digests[2] {
		t.Errorf("digests differ by order of arrival: %x", digests)
	}
	c := NewCatalog()
	_, _ = c.MergeACLs([]ACLEntry{live, tomb})
	if got, _ := c.acl(b); !got.Deleted {
		t.Errorf("a tombstone of the same version lost to the live entry: %+v", got)
	}
}

// ACLs survive a save and a load; files from before ACLs load.
func TestACLCatalogFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), catalogFile)
	if err := os.WriteFile(path, []byte(`{"clock":3,"topics":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := loadCatalog(path)
	if err != nil || len(c.ACLs()) != 0 {
		t.Fatalf("load a catalog from before ACLs: %v %v", err, c.ACLs())
	}
	if _, err := c.MergeACLs([]ACLEntry{{ACLBinding: testACL("t", "User:a"), Lamport: 4, Origin: 1},
		{ACLBinding: testACL("u", "User:b"), Deleted: true, Lamport: 5, Origin: 2}}); err != nil {
		t.Fatal(err)
	}
	if err := saveCatalog(path, c); err != nil {
		t.Fatal(err)
	}
	back, err := loadCatalog(path)
	if err != nil || back.Digest() != c.Digest() || len(back.ACLs()) != 2 {
		t.Fatalf("reloaded: %v %+v", err, back.ACLs())
	}
}

func liveACLs(a *Agent) string {
	var s []string
	for _, b := range a.ACLs() {
		s = append(s, fmt.Sprintf("%s/%s", b.ResourceName, b.Principal))
	}
	return strings.Join(s, " ")
}

// ACLs made on one node reach every node by gossip, deletes made on
// another too, an entry no event carried spreads by anti-entropy, and the
// generation moves on every node that took a change.
func TestACLsSpreadAndPersist(t *testing.T) {
	nodes := cluster(t, 3)
	a, b, c := nodes[0], nodes[1], nodes[2]
	gen := c.ACLsGeneration()
	if err := a.CreateACLs([]ACLBinding{testACL("t", "User:alice"), testACL("t", "User:bob")}); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateACLs([]ACLBinding{{ResourceType: ACLResourceTopic}}); !errors.Is(err, ErrInvalidACL) {
		t.Fatalf("create an empty binding: %v, want ErrInvalidACL", err)
	}
	retry.Run(t, 10*time.Second, func() error {
		if got := liveACLs(c.Agent); got != "t/User:alice t/User:bob" {
			return fmt.Errorf("node 3 ACLs %q", got)
		}
		return nil
	})
	if c.ACLsGeneration() == gen {
		t.Error("node 3's ACL generation did not move")
	}
	if err := b.DeleteACLs([]ACLBinding{testACL("t", "User:bob"), testACL("nope", "User:x")}); err != nil {
		t.Fatal(err)
	}
	quiet := ACLEntry{ACLBinding: testACL("q", "User:carol"), Lamport: a.catalog.tick(), Origin: 1}
	if err := mergeEntries(a.Agent, a.acls, []ACLEntry{quiet}, "local"); err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 20*time.Second, func() error {
		for _, n := range nodes {
			if got := liveACLs(n.Agent); got != "q/User:carol t/User:alice" {
				return fmt.Errorf("%s ACLs %q", n.cfg.NodeName, got)
			}
		}
		return sameCatalog(nodes...)()
	})
	c.stop()
	back, err := loadCatalog(c.catalogPath)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := back.acl(testACL("t", "User:bob")); !ok || !e.Deleted {
		t.Errorf("node 3's file: bob's ACL %+v, want its tombstone", e)
	}
}

// The cluster's bindings are bounded; a create past the bound makes none.
func TestACLsBounded(t *testing.T) {
	n := startNode(t, newTestLogger(t), 1)
	var bs []ACLBinding
	for i := 0; i < MaxACLs; i++ {
		bs = append(bs, testACL(fmt.Sprintf("t%d", i), "User:a"))
	}
	if err := n.CreateACLs(bs[:MaxACLs-1]); err != nil {
		t.Fatal(err)
	}
	if err := n.CreateACLs([]ACLBinding{bs[MaxACLs-1], testACL("over", "User:a")}); !errors.Is(err, ErrTooManyACLs) {
		t.Fatalf("create past the bound: %v, want ErrTooManyACLs", err)
	}
	if got := len(n.ACLs()); got != MaxACLs-1 {
		t.Fatalf("%d ACLs after a refused create, want %d", got, MaxACLs-1)
	}
}
