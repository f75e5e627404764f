package history

import (
	"errors"
	"strings"
	"testing"
)

// base is a clean history: producer a sends a0..a3 to partition 0 and b0,b1
// to partition 1, all acked; a4 failed definitely, a5 unknown (and not
// appended); the reader finds everything acked where it was acked.
func base() *History {
	h := New()
	for _, v := range []string{"a0", "a1", "a2", "a3", "a4", "a5"} {
		h.Send("a", v)
	}
	h.Send("b", "b0")
	h.Send("b", "b1")
	h.Acked("a0", 0, 0)
	h.Acked("a1", 0, 1)
	h.Acked("a2", 0, 3) // offset 2 is a control batch: not a record
	h.Acked("a3", 0, 4)
	h.Failed("a4", errors.New("MESSAGE_TOO_LARGE"), true)
	h.Failed("a5", errors.New("REQUEST_TIMED_OUT"), false)
	h.Acked("b0", 1, 0)
	h.Acked("b1", 1, 1)
	return h
}

func readAll(h *History) {
	h.Read(0, 0, "a0")
	h.Read(0, 1, "a1")
	h.Read(0, 3, "a2")
	h.Read(0, 4, "a3")
	h.Read(1, 0, "b0")
	h.Read(1, 1, "b1")
}

func TestCleanHistory(t *testing.T) {
	h := base()
	readAll(h)
	k := GroupKey{"g", "t", 0}
	m := h.Mark()
	h.Committed(k, 2, m)
	m = h.Mark()
	h.Fetched(k, 2, m)
	h.Committed(k, 4, h.Mark())
	r := h.Check()
	if !r.OK() || r.Checked != 6 || r.Acked != 6 || r.Failed != 1 || r.Unknown != 1 || r.Commits != 2 || r.OffsetFetches != 1 {
		t.Fatalf("clean history: %s", r.Report())
	}
	t.Log(r)
}

// TestUnknownMayAppearOnce: a record whose outcome is unknown may be in the
// log once, not twice.
func TestUnknownMayAppearOnce(t *testing.T) {
	h := base()
	readAll(h)
	h.Read(0, 5, "a5")
	if r := h.Check(); !r.OK() || r.UnknownPresent != 1 {
		t.Fatalf("unknown present once: %s", r.Report())
	}
	h.Read(0, 6, "a5")
	if r := h.Check(); r.OK() || r.Duplicated != 1 {
		t.Fatalf("unknown present twice not caught: %s", r.Report())
	}
}

func TestCatches(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reads [][3]any // partition, offset, value
		count func(Result) int
	}{
		{"loss", [][3]any{{0, 0, "a0"}, {0, 1, "a1"}, {0, 4, "a3"}, {1, 0, "b0"}, {1, 1, "b1"}},
			func(r Result) int { return r.Lost }},
		{"duplicate", [][3]any{{0, 0, "a0"}, {0, 1, "a1"}, {0, 3, "a2"}, {0, 4, "a3"}, {0, 5, "a3"}, {1, 0, "b0"}, {1, 1, "b1"}},
			func(r Result) int { return r.Duplicated }},
		{"offset read twice", [][3]any{{0, 0, "a0"}, {0, 1, "a1"}, {0, 3, "a2"}, {0, 4, "a3"}, {0, 4, "a5"}, {1, 0, "b0"}, {1, 1, "b1"}},
			func(r Result) int { return r.Duplicated }},
		{"offset mismatch", [][3]any{{0, 0, "a0"}, {0, 1, "a1"}, {0, 2, "a2"}, {0, 4, "a3"}, {1, 0, "b0"}, {1, 1, "b1"}},
			func(r Result) int { return r.OffsetMismatch }},
		{"wrong partition", [][3]any{{0, 0, "a0"}, {0, 1, "a1"}, {0, 3, "a2"}, {0, 4, "a3"}, {0, 5, "b0"}, {1, 1, "b1"}},
			func(r Result) int { return r.OffsetMismatch }},
		{"reorder in the log", [][3]any{{0, 0, "a0"}, {0, 1, "a2"}, {0, 3, "a1"}, {0, 4, "a3"}, {1, 0, "b0"}, {1, 1, "b1"}},
			func(r Result) int { return r.Reordered }},
		{"phantom", [][3]any{{0, 0, "a0"}, {0, 1, "a1"}, {0, 3, "a2"}, {0, 4, "a3"}, {0, 5, "zz"}, {1, 0, "b0"}, {1, 1, "b1"}},
			func(r Result) int { return r.Phantom }},
		{"failed present", [][3]any{{0, 0, "a0"}, {0, 1, "a1"}, {0, 3, "a2"}, {0, 4, "a3"}, {0, 5, "a4"}, {1, 0, "b0"}, {1, 1, "b1"}},
			func(r Result) int { return r.FailedPresent }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := base()
			for _, rd := range tc.reads {
				h.Read(int32(rd[0].(int)), int64(rd[1].(int)), rd[2].(string))
			}
			r := h.Check()
			if r.OK() || tc.count(r) == 0 || len(r.Problems) == 0 {
				t.Fatalf("%s not caught: %s", tc.name, r.Report())
			}
			t.Log(r.Report())
		})
	}
}

// TestReorderedAcks: the broker acknowledged a later record of a producer
// at a lower offset than an earlier one (both read back where acked).
func TestReorderedAcks(t *testing.T) {
	h := New()
	h.Send("p", "x0")
	h.Send("p", "x1")
	h.Acked("x0", 0, 5)
	h.Acked("x1", 0, 3)
	h.Read(0, 3, "x1")
	h.Read(0, 5, "x0")
	r := h.Check()
	if r.OK() || r.Reordered == 0 || r.OffsetMismatch != 0 || r.Checked != 2 {
		t.Fatalf("reordered acks not caught: %s", r.Report())
	}
	t.Log(r.Report())
}

// TestOrderIsPerProducer: two producers interleave on one partition; only
// each one's own order counts.
func TestOrderIsPerProducer(t *testing.T) {
	h := New()
	h.Send("p", "p0")
	h.Send("q", "q0")
	h.Send("p", "p1")
	h.Send("q", "q1")
	h.Acked("q0", 0, 0)
	h.Acked("p0", 0, 1)
	h.Acked("q1", 0, 2)
	h.Acked("p1", 0, 3)
	for i, v := range []string{"q0", "p0", "q1", "p1"} {
		h.Read(0, int64(i), v)
	}
	if r := h.Check(); !r.OK() || r.Checked != 4 {
		t.Fatalf("two interleaved producers: %s", r.Report())
	}
}

func TestGroupOffsets(t *testing.T) {
	k, other := GroupKey{"g", "t", 0}, GroupKey{"g", "t", 1}
	t.Run("fetched below an acknowledged commit", func(t *testing.T) {
		h := New()
		h.Committed(k, 10, h.Mark())
		h.Committed(other, 50, h.Mark())
		h.Fetched(k, 7, h.Mark())
		r := h.Check()
		if r.OK() || r.OffsetRegressions != 1 || !strings.Contains(r.Report(), "went back") {
			t.Fatalf("regression not caught: %s", r.Report())
		}
	})
	t.Run("commit acknowledged below an earlier one", func(t *testing.T) {
		h := New()
		h.Committed(k, 10, h.Mark())
		h.Committed(k, 4, h.Mark())
		if r := h.Check(); r.OK() || r.OffsetRegressions != 1 {
			t.Fatalf("regression not caught: %s", r.Report())
		}
	})
	t.Run("concurrent fetch may see the older value", func(t *testing.T) {
		h := New()
		h.Committed(k, 10, h.Mark())
		m := h.Mark() // fetch sent, then a commit of 20 is acknowledged
		h.Committed(k, 20, h.Mark())
		h.Fetched(k, 10, m)
		h.Fetched(other, -1, h.Mark())
		if r := h.Check(); !r.OK() || r.Commits != 2 || r.OffsetFetches != 2 {
			t.Fatalf("a fetch concurrent with a commit flagged: %s", r.Report())
		}
	})
}

// TestAckedWithoutOffset: a client that reports no offset (kcat) still has
// its records checked for presence, partition, count and order.
func TestAckedWithoutOffset(t *testing.T) {
	h := New()
	h.Send("k", "k0")
	h.Send("k", "k1")
	h.Send("k", "k2")
	h.Acked("k0", 0, -1)
	h.Acked("k1", 0, -1)
	h.Acked("k2", 0, -1)
	h.Read(0, 7, "k0")
	h.Read(0, 8, "k1")
	h.Read(0, 9, "k2")
	if r := h.Check(); !r.OK() || r.Checked != 3 {
		t.Fatalf("acked without offsets: %s", r.Report())
	}
	h = New()
	h.Send("k", "k0")
	h.Send("k", "k1")
	h.Acked("k0", 0, -1)
	h.Acked("k1", 0, -1)
	h.Read(0, 7, "k1")
	h.Read(0, 8, "k0")
	if r := h.Check(); r.OK() || r.Reordered != 1 {
		t.Fatalf("reorder without offsets not caught: %s", r.Report())
	}
}
