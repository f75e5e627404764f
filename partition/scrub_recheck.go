package partition

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spool-log/spool/internal/recordbatch"
)

// Recheck looks again at damage an earlier scrub found, which the node
// kept across a restart: marks live in memory, and without a recheck the
// damaged batch would be served again until the next pass finds it. It
// reads only the batch at c's position (a finding whose offsets did not
// follow the batch before it, which one batch alone cannot tell, walks its
// segment again) and marks it, as Scrub does, if it is still damaged. It
// returns whether it is: false for a segment retention or cleaning has
// replaced since, or a position the log no longer holds.
func (l *Log) Recheck(c Corruption) (bool, error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return false, ErrClosed
	}
	var seg *segment
	var size int64
	var gaps bool
	for _, s := range l.segs[:len(l.segs)-1] { // sealed segments, as Scrub walks
		if s.log.path == c.Segment {
			seg, size, gaps = s, s.st.size, l.gapsAllowed(s.base)
		}
	}
	l.mu.RUnlock()
	if seg == nil || c.Position < 0 || c.Position >= size {
		return false, nil
	}
	var found []Corruption
	var err error
	if strings.Contains(c.Reason, "do not follow offset") {
		found, _, err = scrubSegment(seg, size, gaps, func(int64) error { return nil })
	} else {
		found, err = recheckBatch(seg, size, gaps, c)
	}
	if errors.Is(err, errFileGone) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("recheck %s at %d: %w", c.Segment, c.Position, err)
	}
	if len(found) == 0 {
		return false, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Contains(l.segs, seg) {
		return false, nil
	}
	bad := maps.Clone(seg.bad)
	if bad == nil {
		bad = make(map[int64]Corruption, len(found))
	}
	for _, f := range found {
		bad[f.Position] = f
	}
	seg.bad = bad // replaced, not edited (Scrub says why)
	return true, nil
}

// recheckBatch checks the one batch at c.Position of s's first size bytes:
// its header's length, then its CRC and format. What it finds keeps c's
// offsets, which a walk from the segment's start established.
func recheckBatch(s *segment, size int64, gaps bool, c Corruption) ([]Corruption, error) {
	f, err := s.log.acquire()
	if err != nil {
		return nil, err
	}
	defer s.log.release()
	left := size - c.Position
	still := func(n int64, reason string) []Corruption {
		c.Bytes, c.Reason = n, reason
		return []Corruption{c}
	}
	if left < BatchHeaderSize {
		return still(left, fmt.Sprintf("%d bytes, too few for a batch header", left)), nil
	}
	hdr := make([]byte, BatchHeaderSize)
	if _, err := f.ReadAt(hdr, c.Position); err != nil {
		return nil, err
	}
	h, _ := ParseBatchHeader(hdr)
	if h.Length < minBatchLength || h.Size() > left {
		return still(left, fmt.Sprintf("batch length %d does not fit the %d bytes left", h.Length, left)), nil
	}
	buf := make([]byte, h.Size())
	if _, err := f.ReadAt(buf, c.Position); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if _, e := recordbatch.Check(buf, gaps); e != nil {
		return still(h.Size(), e.Error()), nil
	}
	return nil, nil
}
