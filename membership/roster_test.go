package membership

import (
	"fmt"
	"path/filepath"
	"testing"
)

func TestRosterAddWinsAndTombstone(t *testing.T) {
	a := NewRoster()
	a.Add(1, 1)
	a.Add(2, 1)
	a.Add(3, 4)
	stale := NewRoster()
	stale.Merge(a.Entries())

	if _, err := a.Decommission(2); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Decommission(9); err == nil {
		t.Fatal("decommission of an unknown id succeeded")
	}
	// A stale copy still holding 2 alive at gen 1 must not resurrect it.
	a.Merge(stale.Entries())
	if got := fmt.Sprint(a.IDs()); got != "[1 3]" {
		t.Fatalf("after merging a stale roster: %s, want [1 3]", got)
	}
	// And the stale side learns the tombstone.
	stale.Merge(a.Entries())
	if got := fmt.Sprint(stale.IDs()); got != "[1 3]" {
		t.Fatalf("stale roster after merge: %s, want [1 3]", got)
	}
	if a.Digest() != stale.Digest() {
		t.Fatal("converged rosters have different digests")
	}
	// Seeing the same incarnation alive again does not re-add it...
	if a.Add(2, 1) {
		t.Fatal("same generation re-added a decommissioned broker")
	}
	// ...a new boot of that broker does.
	if !a.Add(2, 2) {
		t.Fatal("a new generation was not added")
	}
	if got := fmt.Sprint(a.IDs()); got != "[1 2 3]" {
		t.Fatalf("after reboot: %s", got)
	}
}

func TestRosterMergeOrderIndependent(t *testing.T) {
	x := []RosterEntry{{ID: 1, Gen: 3}, {ID: 2, Gen: 1, Decommissioned: true}, {ID: 4, Gen: 7}}
	y := []RosterEntry{{ID: 1, Gen: 2, Decommissioned: true}, {ID: 2, Gen: 1}, {ID: 5, Gen: 1}}
	p, q := NewRoster(), NewRoster()
	p.Merge(x)
	p.Merge(y)
	q.Merge(y)
	q.Merge(x)
	q.Merge(x)
	if p.Digest() != q.Digest() || fmt.Sprint(p.Entries()) != fmt.Sprint(q.Entries()) {
		t.Fatalf("merge depends on order: %v vs %v", p.Entries(), q.Entries())
	}
	if got := fmt.Sprint(p.IDs()); got != "[1 4 5]" {
		t.Fatalf("ids %s, want [1 4 5]", got)
	}
}

func TestRosterEncodingAndPersistence(t *testing.T) {
	r := NewRoster()
	r.Merge([]RosterEntry{{ID: 0, Gen: 1}, {ID: 2147483647, Gen: 1 << 40, Decommissioned: true}, {ID: 17, Gen: 3}})
	got, err := decodeRoster(encodeRoster(r.Entries()))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(r.Entries()) {
		t.Fatalf("round trip: %v vs %v", got, r.Entries())
	}
	for _, bad := range [][]byte{nil, {3}, {1, 0x80}, {2, 2, 1, 0}, {1, 2, 1, 7}} {
		if _, err := decodeRoster(bad); err == nil {
			t.Errorf("decodeRoster(%v) accepted garbage", bad)
		}
	}
	path := filepath.Join(t.TempDir(), "roster.json")
	if err := saveRoster(path, r); err != nil {
		t.Fatal(err)
	}
	back, err := loadRoster(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Digest() != r.Digest() {
		t.Fatal("persisted roster differs")
	}
}
