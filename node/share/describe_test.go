package share

import "testing"

// TestShareDescribeCountsInFlight: a partition's in-flight count is what
// the window holds still to settle — acquired, or released and available
// for redelivery — and not what was acknowledged above the start offset.
func TestShareDescribeCountsInFlight(t *testing.T) {
	h := newHarness(t, nil)
	h.log.add(10, 0, -1)
	if f := h.fetch("a", 10); count(f.Ranges) != 10 {
		t.Fatalf("acquired %v", f.Ranges)
	}
	if e := h.ack("a", 7, 9, AckRelease); e != nil {
		t.Fatal(e)
	}
	if e := h.ack("a", 2, 3, AckAccept); e != nil { // above the start offset: it stays at 0
		t.Fatal(e)
	}
	got := h.p.Describe("g")
	if len(got) != 1 {
		t.Fatalf("described %+v", got)
	}
	if ps := got[0]; ps.StartOffset != 0 || ps.EndOffset != 10 || ps.InFlight != 8 || ps.Acquired != 5 {
		t.Fatalf("described %+v, want start 0, end 10, 8 in flight of which 5 acquired", ps)
	}
	if other := h.p.Describe("other"); len(other) != 0 {
		t.Fatalf("another group described %+v", other)
	}
}
