package partition

import (
	"errors"
	"os"
	"testing"
)

// A restart forgets the marks of damage a scrub found; Recheck, given the
// finding the node kept, marks the batch again (a read of it fails with
// ErrCorrupt, the batches before it are served), and finds nothing where
// the bytes are sound again or the segment is gone.
func TestRecheckRemarksAfterReopen(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 2000
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	for i := 0; i < 60; i++ {
		mustAppend(t, l, sizedBatch(int64(i), 2, 60), -1)
	}
	l.mu.RLock()
	s := l.segs[1]
	l.mu.RUnlock()
	flip := func(at int64) {
		t.Helper()
		f, err := os.OpenFile(s.log.path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var b [1]byte
		if _, err := f.ReadAt(b[:], at); err != nil {
			t.Fatal(err)
		}
		b[0] ^= 1
		if _, err := f.WriteAt(b[:], at); err != nil {
			t.Fatal(err)
		}
	}
	res, err := l.Scrub(func(int64) error { return nil })
	if err != nil || len(res.Corrupt) != 0 {
		t.Fatalf("scrub of a sound log: %+v %v", res, err)
	}
	// The second batch of the second segment: it starts where the first
	// one's header says it ends.
	hdr := make([]byte, BatchHeaderSize)
	if f, err := os.Open(s.log.path); err != nil {
		t.Fatal(err)
	} else {
		_, err = f.ReadAt(hdr, 0)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	h, _ := ParseBatchHeader(hdr)
	bs := h.Size()
	flip(bs + 100)
	res, err = l.Scrub(func(int64) error { return nil })
	if err != nil || len(res.Corrupt) != 1 || res.Corrupt[0].Position != bs {
		t.Fatalf("scrub: %+v %v, want the batch at %d", res, err, bs)
	}
	finding := res.Corrupt[0]
	l.Close()

	l = openLog(t, dir, cfg)
	defer l.Close()
	if got := l.KnownCorrupt(); len(got) != 0 {
		t.Fatalf("a reopened log knows %+v", got)
	}
	if _, err := l.Read(finding.Offset, 1<<20, l.EndOffset()); err != nil {
		t.Fatalf("before the recheck the damaged batch is served as is: %v (the gap Recheck closes)", err)
	}
	still, err := l.Recheck(finding)
	if err != nil || !still {
		t.Fatalf("recheck: %v %v, want still damaged", still, err)
	}
	if got := l.KnownCorrupt(); len(got) != 1 || got[0].Position != finding.Position {
		t.Fatalf("after the recheck the log knows %+v", got)
	}
	if _, err := l.Read(finding.Offset, 1<<20, l.EndOffset()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read of the damaged batch after the recheck: %v, want ErrCorrupt", err)
	}
	if sl, err := l.Read(s.base, 1<<20, l.EndOffset()); err != nil || len(sl.Regions) == 0 || sl.Next != finding.Offset {
		t.Fatalf("the batches before it: %v", err)
	} else {
		sl.Release()
	}

	// Mended bytes (the same flip again) recheck clean, and a finding
	// naming no segment of the log is moot.
	flip(bs + 100)
	l.Close()
	l = openLog(t, dir, cfg)
	defer l.Close()
	if still, err := l.Recheck(finding); err != nil || still {
		t.Fatalf("recheck of mended bytes: %v %v", still, err)
	}
	gone := finding
	gone.Segment += ".deleted"
	if still, err := l.Recheck(gone); err != nil || still {
		t.Fatalf("recheck of a segment the log has not: %v %v", still, err)
	}
}
