package partition

import (
	"fmt"
	"testing"
)

// BenchmarkRead measures Read as a fetch does it: consumers reading on from
// where they stopped (the hint path) and from random offsets (the index
// path), over a log of small batches, so the header walk dominates.
//
//	go test -run='^$' -bench=BenchmarkRead ./partition/
func BenchmarkRead(b *testing.B) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 8 << 20
	l := openLog(b, b.TempDir(), cfg)
	defer l.Close()
	batch := sizedBatch(1, 10, 100)
	for l.Size() < 32<<20 {
		mustAppend(b, l, append([]byte(nil), batch...), -1)
	}
	end := l.EndOffset()
	for _, maxBytes := range []int{64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("sequential/max=%dKiB", maxBytes>>10), func(b *testing.B) {
			off := int64(0)
			for i := 0; i < b.N; i++ {
				s, err := l.Read(off, maxBytes, end)
				if err != nil {
					b.Fatal(err)
				}
				off += s.Size() / int64(len(batch)) * 10 // ten records a batch
				s.Release()
				if off >= end {
					off = 0
				}
			}
		})
		b.Run(fmt.Sprintf("random/max=%dKiB", maxBytes>>10), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				off := int64(i*7919) % end
				s, err := l.Read(off, maxBytes, end)
				if err != nil {
					b.Fatal(err)
				}
				s.Release()
			}
		})
	}
}
