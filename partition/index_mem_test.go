package partition

import (
	"bytes"
	"os"
	"testing"
)

// TestActiveIndexInMemoryAgreesWithFile: the newest offset index entries
// the active segment keeps in memory are the tail of its index file, and a
// lookup through them finds the same position as a search of the file, for
// every offset, through appends, rolls (which drop them from the sealed
// segment), a truncation (which rebuilds them), a reopening (which starts
// them empty) and a segment long enough for them to be trimmed.
func TestActiveIndexInMemoryAgreesWithFile(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig() // an index entry every 256 bytes
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
		for _, s := range l.segs[:len(l.segs)-1] {
			if s.memOff != nil {
				t.Fatalf("%s: sealed segment %d keeps index entries in memory", when, s.base)
			}
		}
		active := l.segs[len(l.segs)-1]
		if got := len(active.memOff) > 0; got != wantInMemory {
			t.Fatalf("%s: active segment has %d index entries in memory", when, len(active.memOff)/offsetEntrySize)
		}
		if len(active.memOff) > 2*memIndexEntries*offsetEntrySize {
			t.Fatalf("%s: %d index entries in memory, over the bound", when, len(active.memOff)/offsetEntrySize)
		}
		file, err := os.ReadFile(active.offIdx.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(file, active.memOff) {
			t.Fatalf("%s: the %d entries in memory are not the index file's last", when, len(active.memOff)/offsetEntrySize)
		}
		mem := active.memOff
		defer func() { active.memOff = mem }()
		for off := active.base; off <= active.st.next; off++ {
			active.memOff = mem
			viaMemory, err := active.lookup(off)
			if err != nil {
				t.Fatal(err)
			}
			active.memOff = nil
			viaFile, err := active.lookup(off)
			if err != nil {
				t.Fatal(err)
			}
			if viaMemory != viaFile {
				t.Fatalf("%s: offset %d: at %d by memory, %d by the file", when, off, viaMemory, viaFile)
			}
		}
	}

	for i := 0; i < 150; i++ {
		mustAppend(t, l, sizedBatch(int64(i), 1+i%5, 100), 0)
		if i%10 == 5 {
			check("appending", true)
		}
	}
	if len(l.segs) < 2 {
		t.Fatalf("%d segments: the test needs a roll", len(l.segs))
	}
	if err := l.TruncateTo(l.EndOffset() - 3); err != nil {
		t.Fatal(err)
	}
	check("after truncation", true)
	mustAppend(t, l, sizedBatch(1, 3, 100), 0)
	check("appending after truncation", true)

	l.Close()
	cfg.SegmentBytes = 8 << 20
	l = openLog(t, dir, cfg)
	check("reopened after a clean close", false) // trusted: nothing walked
	for i := 0; i < 3*memIndexEntries; i++ {
		mustAppend(t, l, sizedBatch(int64(i), 1, 200), 0) // an entry each
	}
	check("past the bound", true)
}
