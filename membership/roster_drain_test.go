package membership

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// A drain is a register of its own in the roster entry: it survives a new
// generation of the broker, a cancel outranks the drain it ends, the
// operator's drain outranks the automatic one, and the tombstone that ends
// a drain lets a new boot of the broker in as an empty, undrained broker.
func TestRosterDrainMerge(t *testing.T) {
	a := NewRoster()
	a.Add(1, 1)
	a.Add(2, 1)
	a.Add(3, 1)
	stale := NewRoster()
	stale.Merge(a.Entries())

	e, _ := a.entry(2)
	e.Drain = drainTo(e.Drain, drainAuto)
	a.Merge([]RosterEntry{e})
	e.Drain = drainTo(e.Drain, drainOperator)
	a.Merge([]RosterEntry{e})
	if got := fmt.Sprint(a.IDs()); got != "[1 3]" {
		t.Fatalf("roster with 2 draining: %s, want [1 3]", got)
	}
	// The broker reboots: its new generation keeps the drain.
	a.Add(2, 2)
	if e, _ := a.entry(2); !e.Draining() || e.DrainAuto() || e.Gen != 2 {
		t.Fatalf("after a reboot: %+v, want an operator's drain at gen 2", e)
	}
	// A stale roster does not undo it; the stale side learns it.
	a.Merge(stale.Entries())
	stale.Merge(a.Entries())
	if a.Digest() != stale.Digest() || fmt.Sprint(stale.IDs()) != "[1 3]" {
		t.Fatalf("stale side %v digest %s vs %s", stale.Entries(), stale.Digest(), a.Digest())
	}
	// An automatic drain recorded concurrently loses to the operator's.
	auto, _ := stale.entry(2)
	auto.Drain = drainTo(auto.Drain, drainAuto)
	a.Merge([]RosterEntry{auto})
	if e, _ := a.entry(2); e.DrainAuto() {
		t.Fatalf("an automatic drain overrode the operator's: %+v", e)
	}
	// A cancel outranks the drain; a later drain outranks the cancel.
	e, _ = a.entry(2)
	cancelled := e
	cancelled.Drain = drainEnded(e.Drain)
	a.Merge([]RosterEntry{cancelled})
	a.Merge([]RosterEntry{e})
	if got := fmt.Sprint(a.IDs()); got != "[1 2 3]" {
		t.Fatalf("after a cancel: %s, want [1 2 3]", got)
	}
	again := cancelled
	again.Drain = drainTo(cancelled.Drain, drainForced)
	a.Merge([]RosterEntry{again, cancelled})
	if e, _ := a.entry(2); !e.DrainForced() {
		t.Fatalf("a drain after the cancel: %+v", e)
	}
	// The tombstone ends the drain; a new boot joins undrained.
	tomb := again
	tomb.Decommissioned, tomb.Drain = true, drainEnded(again.Drain)
	a.Merge([]RosterEntry{tomb})
	a.Add(2, 3)
	if e, _ := a.entry(2); e.Draining() || e.Decommissioned {
		t.Fatalf("a new boot after the drained removal: %+v", e)
	}
	// Any order of merging converges.
	for range 20 {
		ops := []RosterEntry{e, cancelled, again, tomb, auto, {ID: 2, Gen: 3}}
		rand.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
		r := NewRoster()
		for _, op := range ops {
			r.Merge([]RosterEntry{op})
		}
		got, _ := r.entry(2)
		if want, _ := a.entry(2); got != want {
			t.Fatalf("order %v: %+v, want %+v", ops, got, want)
		}
	}
}

func TestRosterDrainEncoding(t *testing.T) {
	plain := []RosterEntry{{ID: 1, Gen: 3}, {ID: 2, Gen: 1, Decommissioned: true}}
	if raw := encodeRoster(plain); raw[0] != 1 {
		t.Fatalf("a roster without drains encodes as version %d, want 1", raw[0])
	}
	drained := append(plain, RosterEntry{ID: 4, Gen: 2, Drain: 6})
	raw := encodeRoster(drained)
	if raw[0] != 2 {
		t.Fatalf("a roster with a drain encodes as version %d, want 2", raw[0])
	}
	got, err := decodeRoster(raw)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(drained) {
		t.Fatalf("decode: %v %v, want %v", got, err, drained)
	}
	if _, err := decodeRoster(raw[:len(raw)-1]); err == nil {
		t.Fatal("a truncated drain decoded")
	}
}
