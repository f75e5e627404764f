package partition

import (
	"fmt"
	"sort"
)

// Read returns file regions holding whole batches, starting with the batch
// that contains offset, for at most maxBytes, except that the first batch is
// returned whole even if larger (so a consumer always progresses). It never
// includes a batch with a record at or past upTo (the high watermark) or past
// the log end. It stops before a damaged batch (a length running off the
// segment, or a batch a scrub found corrupt): a read starting at one is
// ErrCorrupt, which the node answers with KAFKA_STORAGE_ERROR rather than
// send bytes known bad. A consumer told the bytes failed their CRC cannot
// tell its network from the broker's disk and retries the same fetch for
// ever; a storage error names the broker's disk, is what Kafka answers for
// a failed log directory, and (once replicas exist) sends the client to
// another replica after a metadata refresh. An offset before the log start or past its end is
// ErrOffsetOutOfRange; offset == upTo or the end gives an empty Slice. The
// caller must Release the Slice once sent; until then its files stay
// readable even if retention, a roll or the file cache close them.
func (l *Log) Read(offset int64, maxBytes int, upTo int64) (*Slice, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, ErrClosed
	}
	start, end := l.startLocked(), l.segs[len(l.segs)-1].st.next
	if offset < start || offset > end {
		return nil, fmt.Errorf("read %s at %d, log holds [%d, %d): %w", l.dir, offset, start, end, ErrOffsetOutOfRange)
	}
	upTo = min(upTo, end)
	if offset >= upTo {
		return NewSlice(nil, nil), nil
	}

	var regions []Region
	var pinned []*fileHandle
	unpin := func() {
		for _, h := range pinned {
			h.release()
		}
	}
	taken := int64(0)
	i := l.segmentFor(offset)
	done := false
	hr := newHeaderReader()
	defer hr.free()
	for ; i < len(l.segs) && !done; i++ {
		s := l.segs[i]
		if s.st.size == 0 {
			continue
		}
		f, err := s.log.acquire()
		if err != nil {
			unpin()
			return nil, fmt.Errorf("read %s: %w", l.dir, err)
		}
		pinned = append(pinned, s.log)
		pos := int64(0)
		if len(regions) == 0 {
			if pos, err = s.lookup(offset); err != nil {
				unpin()
				return nil, fmt.Errorf("read %s: %w", l.dir, err)
			}
		}
		first := pos
		hr.reset(f, s.st.size)
		var last int64 = -1
		for pos < s.st.size {
			h, err := hr.headerAt(pos)
			if err == nil && (h.Length < minBatchLength || h.Size() > s.st.size-pos) {
				err = fmt.Errorf("batch at %s:%d has length %d: %w", s.log.path, pos, h.Length, ErrCorrupt)
			}
			// A batch a scrub marked still has a sound length, so a read
			// may step over it to the offsets after it.
			if c, ok := s.bad[pos]; ok && err == nil && h.LastOffset() >= offset {
				err = fmt.Errorf("batch at %s:%d: %s: %w", s.log.path, pos, c.Reason, ErrCorrupt)
			}
			if err != nil {
				if pos > first || len(regions) > 0 {
					// Every whole batch before the damage is served; only a
					// read starting at the damaged batch fails.
					done = true
					break
				}
				unpin()
				return nil, fmt.Errorf("read %s at %d: %w", l.dir, offset, err)
			}
			if h.LastOffset() < offset {
				pos += h.Size()
				first = pos
				continue
			}
			if h.LastOffset() >= upTo || (taken > 0 && taken+h.Size() > int64(maxBytes)) {
				done = true
				break
			}
			taken += h.Size()
			pos += h.Size()
			last = h.LastOffset()
		}
		if last >= 0 {
			s.hintNext(last+1, pos)
		}
		if pos > first {
			regions = append(regions, Region{File: f, Position: first, Length: pos - first})
		} else {
			pinned = pinned[:len(pinned)-1]
			s.log.release()
		}
	}
	return NewSlice(regions, unpin), nil
}

// segmentFor is the index of the segment holding offset. Called under mu.
func (l *Log) segmentFor(offset int64) int {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset })
	return max(i-1, 0)
}

// lookup is a position in the segment at or before the batch holding offset,
// from the offset index. Called under Log.mu.
func (s *segment) lookup(offset int64) (int64, error) {
	if s.st.offEntries == 0 || offset < s.base {
		return 0, nil
	}
	rel := uint32(min(offset-s.base, int64(^uint32(0))))
	if pos, ok := s.hinted(rel); ok {
		return pos, nil
	}
	if n := len(s.memOff) / offsetEntrySize; n > 0 && offsetEntryAt(s.memOff, 0).rel <= rel {
		// memOff holds every entry after its first, so the floor is in it.
		i := sort.Search(n, func(i int) bool { return offsetEntryAt(s.memOff, i).rel > rel })
		return int64(offsetEntryAt(s.memOff, i-1).pos), nil
	}
	if n := len(s.pendOff) / offsetEntrySize; n > 0 && offsetEntryAt(s.pendOff, 0).rel <= rel {
		i := sort.Search(n, func(i int) bool { return offsetEntryAt(s.pendOff, i).rel > rel })
		return int64(offsetEntryAt(s.pendOff, i-1).pos), nil
	}
	n := s.fileOffEntries()
	if n == 0 {
		return 0, nil
	}
	f, err := s.offIdx.acquire()
	if err != nil {
		return 0, err
	}
	defer s.offIdx.release()
	e, ok, err := floorOffsetEntry(f, n, rel)
	if err != nil || !ok {
		return 0, err
	}
	return int64(e.pos), nil
}

// OffsetForTime finds the first batch whose maxTimestamp is >= ts and returns
// its base offset and maxTimestamp (ListOffsets by time; the batch is the
// unit stored, so the offset may precede the first matching record within
// it). If no batch qualifies it returns EndOffset() and -1.
func (l *Log) OffsetForTime(ts int64) (offset int64, timestamp int64, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0, 0, ErrClosed
	}
	for _, s := range l.segs {
		if s.st.size == 0 || s.st.maxTS < ts {
			continue
		}
		pos, err := s.timeLookup(ts)
		if err != nil {
			return 0, 0, fmt.Errorf("offset for time %d in %s: %w", ts, l.dir, err)
		}
		f, err := s.log.acquire()
		if err != nil {
			return 0, 0, fmt.Errorf("offset for time %d in %s: %w", ts, l.dir, err)
		}
		for pos < s.st.size {
			h, herr := readHeaderAt(f, pos)
			if herr == nil && h.Length < minBatchLength {
				herr = fmt.Errorf("batch at %s:%d has length %d", s.log.path, pos, h.Length)
			}
			if herr != nil {
				s.log.release()
				return 0, 0, fmt.Errorf("offset for time %d in %s: %w", ts, l.dir, herr)
			}
			if h.MaxTimestamp >= ts {
				s.log.release()
				return h.BaseOffset, h.MaxTimestamp, nil
			}
			pos += h.Size()
		}
		s.log.release()
		// maxTS said a batch qualifies; the index and log disagree.
		return 0, 0, fmt.Errorf("offset for time %d in %s: segment %d has no batch at its newest timestamp %d", ts, l.dir, s.base, s.st.maxTS)
	}
	return l.segs[len(l.segs)-1].st.next, -1, nil
}

// timeLookup is a position in the segment before which no batch has a
// timestamp >= ts. Called under Log.mu.
func (s *segment) timeLookup(ts int64) (int64, error) {
	var e timeEntry
	if n := len(s.pendTime) / timeEntrySize; n > 0 && timeEntryAt(s.pendTime, 0).ts < ts {
		i := sort.Search(n, func(i int) bool { return timeEntryAt(s.pendTime, i).ts >= ts })
		e = timeEntryAt(s.pendTime, i-1)
	} else {
		n := s.fileTimeEntries()
		if n == 0 {
			return 0, nil
		}
		f, err := s.tsIdx.acquire()
		if err != nil {
			return 0, err
		}
		var ok bool
		e, ok, err = floorTimeEntry(f, n, ts)
		s.tsIdx.release()
		if err != nil || !ok {
			return 0, err
		}
	}
	return s.lookup(s.base + int64(e.rel))
}
