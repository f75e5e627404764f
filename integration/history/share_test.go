package history

import "testing"

func TestShareCheckFindsEachViolation(t *testing.T) {
	h := NewShare()
	for _, v := range []string{"a", "b", "c", "d", "e", "f"} {
		h.Sent(v)
	}
	h.Confirmed("x", "a") // fine
	h.Confirmed("x", "b") // twice
	h.Confirmed("y", "b") //
	h.Confirmed("x", "c") // and redelivered
	h.Drained("c")        //
	h.Drained("d")        // still available: fine
	h.Unsure("e")         // unknown outcome, not drained: fine
	h.Drained("zz")       // phantom
	r := h.CheckShare()   // f: lost
	if len(r.Twice) != 1 || len(r.Redelivered) != 1 || len(r.Lost) != 1 || r.Lost[0] != "f" || len(r.Phantom) != 1 || r.OK() {
		t.Fatalf("%s", r)
	}
	ok := NewShare()
	ok.Sent("a")
	ok.Confirmed("x", "a")
	if r := ok.CheckShare(); !r.OK() {
		t.Fatalf("%s", r)
	}
}
