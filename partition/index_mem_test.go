package partition

import (
	"testing"
)

// TestActiveIndexInMemoryAgreesWithFile: the active segment's in-memory
// offset index gives the same floor position as a search of its file, for
// every offset, through appends, a roll (which drops it from the sealed
// segment), a truncation (which rebuilds it) and a restart (which walks,
// or trusts, the last segment).
func TestActiveIndexInMemoryAgreesWithFile(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 16 << 10
	l := openLog(t, dir, cfg)
	defer func() { l.Close() }()

	check := func(when string, wantInMemory bool) {
		t.Helper()
		if err := l.Flush(); err != nil { // every entry in the files too
			t.Fatal(err)
		}
		l.mu.RLock()
		defer l.mu.RUnlock()
		active := l.segs[len(l.segs)-1]
		for _, s := range l.segs[:len(l.segs)-1] {
			if s.memOffAll || s.memOff != nil {
				t.Fatalf("%s: sealed segment %d keeps its index in memory", when, s.base)
			}
		}
		if active.memOffAll != wantInMemory {
			t.Fatalf("%s: active segment's index in memory: %v, want %v", when, active.memOffAll, wantInMemory)
		}
		if !active.memOffAll {
			return
		}
		for off := active.base; off <= active.st.next; off++ {
			mem, err := active.lookup(off)
			if err != nil {
				t.Fatal(err)
			}
			active.memOffAll = false
			file, err := active.lookup(off)
			active.memOffAll = true
			if err != nil {
				t.Fatal(err)
			}
			if mem != file {
				t.Fatalf("%s: offset %d: in memory at %d, file at %d", when, off, mem, file)
			}
		}
		if got, want := len(active.memOff)/offsetEntrySize, active.st.offEntries; got != want {
			t.Fatalf("%s: %d entries in memory, %d in the segment", when, got, want)
		}
	}

	for i := 0; i < 150; i++ {
		mustAppend(t, l, sizedBatch(int64(i), 1+i%5, 100), 0)
		if i%10 == 0 {
			check("appending", true)
		}
	}
	if len(l.segs) < 2 {
		t.Fatalf("%d segments: the test needs a roll", len(l.segs))
	}
	check("after rolls", true)
	if err := l.TruncateTo(l.EndOffset() - 7); err != nil {
		t.Fatal(err)
	}
	check("after truncation", true)
	mustAppend(t, l, sizedBatch(1, 3, 100), 0)
	check("appending after truncation", true)
	l.Close()
	l = openLog(t, dir, cfg)
	// A clean close is trusted on reopening, and the index file read.
	check("reopened", true)
	mustAppend(t, l, sizedBatch(1, 3, 100), 0)
	check("appending after reopening", true)
}
