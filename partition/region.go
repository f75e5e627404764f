package partition

import (
	"os"
	"sync"
)

// Region is a byte range of one segment file that holds whole record batches.
// The network layer sends it with sendfile(2) at Position, never through the
// file's shared offset, so many readers can send from one *os.File at once.
type Region struct {
	File     *os.File
	Position int64
	Length   int64
}

// Slice is what a Read hands out: consecutive regions holding whole batches,
// with their files pinned open until Release. Retention, a roll or an idle-file
// sweep may close a segment meanwhile; the pinned handle keeps the bytes
// readable until the last Slice that uses it is released.
type Slice struct {
	Regions []Region
	// Next is the offset after the last batch in Regions (0 when empty):
	// a read_committed fetch lists the aborted transactions up to it.
	Next int64

	once    sync.Once
	release func()
}

// NewSlice builds a Slice from regions; release (may be nil) runs once, on the
// first Release.
func NewSlice(regions []Region, release func()) *Slice {
	return &Slice{Regions: regions, release: release}
}

// Size is the total number of bytes in the slice's regions.
func (s *Slice) Size() int64 {
	if s == nil {
		return 0
	}
	var n int64
	for _, r := range s.Regions {
		n += r.Length
	}
	return n
}

// Release unpins the slice's files. It is safe to call more than once and on nil.
func (s *Slice) Release() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		if s.release != nil {
			s.release()
		}
	})
}
