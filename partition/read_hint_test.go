package partition

import (
	"bytes"
	"testing"
)

// TestSequentialReadsAndTruncation: reading on from where the last Read
// ended (the segment's hint) returns exactly the next batches, through
// thousands of tiny batches (read in windows, not a pread per header), and
// a truncation that rewrites the segment in place forgets where reads
// ended, so what is appended after it is what is read.
func TestSequentialReadsAndTruncation(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig())
	defer l.Close()
	var want [][]byte
	for i := 0; i < 3000; i++ {
		b := sizedBatch(int64(i), 1, 20+i%50)
		want = append(want, b)
		mustAppend(t, l, b, 0)
	}
	readFrom := func(offset int64, maxBytes int) []byte {
		t.Helper()
		s, err := l.Read(offset, maxBytes, l.EndOffset())
		if err != nil {
			t.Fatalf("read at %d: %v", offset, err)
		}
		defer s.Release()
		return readAll(t, s)
	}
	next := int64(0)
	for next < l.EndOffset() {
		got := readFrom(next, 4000)
		hs := batchesIn(t, got)
		if len(hs) == 0 {
			t.Fatalf("read at %d returned nothing", next)
		}
		for k, h := range hs {
			if h.BaseOffset != next+int64(k) {
				t.Fatalf("read at %d: batch %d has base %d", next, k, h.BaseOffset)
			}
		}
		var exp []byte
		for o := next; o < next+int64(len(hs)); o++ {
			exp = append(exp, want[o][BatchHeaderSize:]...) // offsets and epochs are rewritten; the rest is as sent
		}
		var body []byte
		for p := 0; p < len(got); {
			hh, _ := ParseBatchHeader(got[p:])
			body = append(body, got[p+BatchHeaderSize:p+int(hh.Size())]...)
			p += int(hh.Size())
		}
		if !bytes.Equal(body, exp) {
			t.Fatalf("read at %d: records differ from what was appended", next)
		}
		next += int64(len(hs))
	}

	// A reader stops at 1992; the log is cut at 1500, which rewrites the
	// segment in place, and grows anew with other batches. The hint must
	// be gone, and reading at 1992 must find the new batch holding it.
	active := func() *segment { l.mu.RLock(); defer l.mu.RUnlock(); return l.segs[len(l.segs)-1] }
	if got := batchesIn(t, readFrom(1990, len(want[1990])+len(want[1991]))); got[len(got)-1].LastOffset() != 1991 {
		t.Fatalf("read at 1990: %+v", got)
	}
	if _, ok := active().hinted(uint32(1992 - active().base)); !ok {
		t.Fatal("a read that ended before 1992 left no hint there")
	}
	segments := func() int { l.mu.RLock(); defer l.mu.RUnlock(); return len(l.segs) }
	before := segments()
	if err := l.TruncateTo(1500); err != nil {
		t.Fatal(err)
	}
	if _, ok := active().hinted(uint32(1992 - active().base)); ok {
		t.Fatal("truncation kept a hint into the rewritten segment")
	}
	for i := 1500; i < 2100; i += 2 {
		mustAppend(t, l, sizedBatch(int64(i), 2, 90), 0) // two records a batch now
	}
	if segments() != before {
		t.Fatalf("%d segments after truncating and appending, was %d: the append rolled", segments(), before)
	}
	hs := batchesIn(t, readFrom(1992, 1))
	if len(hs) != 1 || hs[0].BaseOffset != 1992 || hs[0].NumRecords != 2 {
		t.Fatalf("read at 1992 after truncation: %+v", hs)
	}
}

// TestReadAcrossHeaderWindows: one Read over thousands of small batches
// walks their headers through many 16 KiB windows, headers straddling a
// window's edge included, and past batches too large to share one (whose
// next header is read alone), and returns every batch whole.
func TestReadAcrossHeaderWindows(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig())
	defer l.Close()
	n := 0
	var bases []int64
	for size := 0; size < 5*headerReadBytes; n++ {
		b := sizedBatch(int64(n), 1, 10+n%37) // sizes that do not divide the window
		if n%50 == 49 {
			b = sizedBatch(int64(n), 2, headerReadBytes/3) // larger than half a window
		}
		size += len(b)
		bases = append(bases, mustAppend(t, l, b, 0).BaseOffset)
	}
	s, err := l.Read(0, 1<<20, l.EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	hs := batchesIn(t, readAll(t, s))
	if len(hs) != n {
		t.Fatalf("read %d batches, appended %d", len(hs), n)
	}
	for i, h := range hs {
		if h.BaseOffset != bases[i] {
			t.Fatalf("batch %d has base offset %d, want %d", i, h.BaseOffset, bases[i])
		}
	}
}
