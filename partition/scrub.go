package partition

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/spool-log/spool/internal/recordbatch"
)

// Scrubbing: recovery checks only what a crash may have torn (the segments
// after the recovery point), so damage that appears later in a sealed
// segment (a flipped bit on the disk, a bad sector) would be served as is,
// and a consumer's CRC check would reject it for ever. Scrub walks the sealed
// segments as recovery would (length, CRC-32C, contiguous offsets), never
// changing a byte, and marks each damaged batch so that Read refuses it
// (ErrCorrupt) while still serving everything before it.

// ScrubResult is what one Scrub of a log covered and found.
type ScrubResult struct {
	Segments int          // sealed segments walked
	Bytes    int64        // bytes read
	Corrupt  []Corruption // damaged batches, in log order
}

// scrubChunk is the most Scrub reads before asking pace again.
const scrubChunk = 64 << 10

// Scrub walks every sealed segment (not the active one, still being
// written, nor one wholly below the log start), checking each batch's length, CRC and format and that offsets
// ascend. pace is called with the bytes about to be read, and may sleep to
// bound the rate; an error from it stops the scrub and is returned. A batch
// with a bad CRC or format is marked and the walk goes on past it; a length
// that runs off the segment or offsets out of order end the walk of that
// segment, since what follows cannot be located or trusted. A segment that
// retention or cleaning replaced meanwhile is skipped: its findings are moot.
func (l *Log) Scrub(pace func(n int64) error) (ScrubResult, error) {
	var res ScrubResult
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return res, ErrClosed
	}
	// Segments wholly below the log start hold only records DeleteRecords
	// deleted, which no read reaches and retention removes: damage there
	// is no finding.
	first := 0
	for first < len(l.segs)-1 && l.segs[first].st.next <= l.logStart {
		first++
	}
	segs := slices.Clone(l.segs[first : len(l.segs)-1])
	sizes := make([]int64, len(segs))
	gaps := make([]bool, len(segs))
	for i, s := range segs {
		sizes[i], gaps[i] = s.st.size, l.gapsAllowed(s.base)
	}
	l.mu.RUnlock()
	for i, s := range segs {
		found, n, err := scrubSegment(s, sizes[i], gaps[i], pace)
		res.Bytes += n
		if errors.Is(err, errFileGone) {
			continue
		}
		if err != nil {
			return res, fmt.Errorf("scrub %s: %w", l.dir, err)
		}
		res.Segments++
		if len(found) == 0 {
			continue
		}
		l.mu.Lock()
		if slices.Contains(l.segs, s) {
			// Replaced, not edited: a Read walks the map it saw under mu
			// after letting go of mu.
			bad := maps.Clone(s.bad)
			if bad == nil {
				bad = make(map[int64]Corruption, len(found))
			}
			for _, c := range found {
				bad[c.Position] = c
			}
			s.bad = bad
			res.Corrupt = append(res.Corrupt, found...)
		}
		l.mu.Unlock()
	}
	return res, nil
}

// scrubSegment walks the first size bytes of s. It returns the damaged
// batches and how many bytes it read.
func scrubSegment(s *segment, size int64, gaps bool, pace func(int64) error) ([]Corruption, int64, error) {
	f, err := s.log.acquire()
	if err != nil {
		return nil, 0, err
	}
	defer s.log.release()
	var found []Corruption
	bad := func(pos, off, end, n int64, format string, args ...any) {
		found = append(found, Corruption{Segment: s.log.path, Position: pos, Offset: off, EndOffset: end, Bytes: n, Reason: fmt.Sprintf(format, args...)})
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), scrubChunk)
	buf := make([]byte, 0, scrubChunk)
	read := int64(0)
	pos, next := int64(0), s.base
	for pos < size {
		if size-pos < BatchHeaderSize {
			bad(pos, next, -1, size-pos, "%d bytes, too few for a batch header", size-pos)
			break
		}
		buf = buf[:BatchHeaderSize]
		if err := pace(BatchHeaderSize); err != nil {
			return found, read, err
		}
		if _, err := io.ReadFull(r, buf); err != nil {
			return found, read, fmt.Errorf("read %s at %d: %w", s.log.path, pos, err)
		}
		read += BatchHeaderSize
		h, _ := ParseBatchHeader(buf)
		if h.Length < minBatchLength || h.Size() > size-pos {
			bad(pos, next, -1, size-pos, "batch length %d does not fit the %d bytes left", h.Length, size-pos)
			break
		}
		if !followsAt(h.BaseOffset, next, gaps) || h.LastOffsetDelta < 0 {
			bad(pos, next, -1, size-pos, "batch offsets %d to %d do not follow offset %d", h.BaseOffset, h.LastOffset(), next-1)
			break
		}
		buf = slices.Grow(buf, int(h.Size())-len(buf))[:h.Size()]
		for done := int64(BatchHeaderSize); done < h.Size(); {
			n := min(h.Size()-done, scrubChunk)
			if err := pace(n); err != nil {
				return found, read, err
			}
			if _, err := io.ReadFull(r, buf[done:done+n]); err != nil {
				return found, read, fmt.Errorf("read %s at %d: %w", s.log.path, pos+done, err)
			}
			done += n
			read += n
		}
		if _, e := recordbatch.Check(buf, gaps); e != nil {
			bad(pos, h.BaseOffset, h.LastOffset()+1, h.Size(), "%s", e.Error())
		}
		next = h.LastOffset() + 1
		pos += h.Size()
	}
	return found, read, nil
}

// KnownCorrupt lists the damaged batches scrubs found that are still in the
// log, in log order.
func (l *Log) KnownCorrupt() []Corruption {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []Corruption
	for _, s := range l.segs {
		start := len(out)
		for _, c := range s.bad {
			out = append(out, c)
		}
		slices.SortFunc(out[start:], func(a, b Corruption) int { return cmp.Compare(a.Position, b.Position) })
	}
	return out
}
