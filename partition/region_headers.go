package partition

import (
	"fmt"
	"os"
)

// EachBatchHeader calls fn, in log order, with the header of every batch in
// s whose last offset is at or past from, and where the batch lies; it
// reads the headers only (BatchHeaderSize bytes each), never the records,
// so state rebuilt from headers (producers, open transactions) costs little
// per batch. It returns the offset after the last batch fn was called for
// (from if none), also on an error, so a caller reading on asks from there.
func (s *Slice) EachBatchHeader(from int64, fn func(f *os.File, pos int64, h BatchHeader) error) (int64, error) {
	hdr := make([]byte, BatchHeaderSize)
	for _, r := range s.Regions {
		for pos, stop := r.Position, r.Position+r.Length; pos+BatchHeaderSize <= stop; {
			if _, err := r.File.ReadAt(hdr, pos); err != nil {
				return from, fmt.Errorf("read batch header at %d in %s: %w", pos, r.File.Name(), err)
			}
			h, err := ParseBatchHeader(hdr)
			if err == nil && (h.Magic != 2 || h.Size() < BatchHeaderSize) {
				err = fmt.Errorf("magic %d, size %d: not a record batch", h.Magic, h.Size())
			}
			if err != nil {
				return from, fmt.Errorf("parse batch header at %d in %s: %w", pos, r.File.Name(), err)
			}
			if h.LastOffset() >= from {
				if err := fn(r.File, pos, h); err != nil {
					return from, err
				}
				from = h.LastOffset() + 1
			}
			pos += h.Size()
		}
	}
	return from, nil
}
