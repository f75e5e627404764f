package partition

import (
	"os"
	"strings"
	"testing"
)

// EachBatchHeader walks a slice spanning segments batch by batch, from the
// batch holding the asked offset on, and stops at a torn header with the
// offset reached.
func TestEachBatchHeader(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 300 // a few batches per segment
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	for i := range 12 {
		mustAppend(t, l, sizedBatch(int64(i), 3, 20), 1) // offsets 3i..3i+2
	}
	s, err := l.Read(4, 1<<20, l.EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if len(s.Regions) < 2 {
		t.Fatalf("%d regions: the test wants a slice across segments", len(s.Regions))
	}
	var bases []int64
	next, err := s.EachBatchHeader(4, func(_ *os.File, _ int64, h BatchHeader) error {
		bases = append(bases, h.BaseOffset)
		return nil
	})
	if err != nil || next != s.Next {
		t.Fatalf("next %d (slice's %d), %v", next, s.Next, err)
	}
	if bases[0] != 3 || len(bases) != int(next-3)/3 {
		t.Fatalf("batches from %v, next %d: the batch holding offset 4 first, then each once", bases, next)
	}
	// From past the slice: nothing called, from returned.
	if next2, err := s.EachBatchHeader(next+10, func(*os.File, int64, BatchHeader) error {
		t.Fatal("called past from")
		return nil
	}); err != nil || next2 != next+10 {
		t.Fatalf("%d, %v", next2, err)
	}
	// A zeroed header: an error naming the file, and the offset reached.
	r := s.Regions[len(s.Regions)-1]
	bad := NewSlice([]Region{{File: r.File, Position: r.Position + r.Length, Length: BatchHeaderSize}}, nil)
	f, err := os.OpenFile(r.File.Name(), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, BatchHeaderSize), r.Position+r.Length); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if n, err := bad.EachBatchHeader(0, func(*os.File, int64, BatchHeader) error { return nil }); err == nil || n != 0 || !strings.Contains(err.Error(), r.File.Name()) {
		t.Fatalf("torn header: %d, %v", n, err)
	}
}
