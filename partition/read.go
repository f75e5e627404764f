package partition

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
)

// segView is a segment as a Read saw it under mu: the walk that follows
// reads its file outside mu, never past size, and the bytes below a
// published size change only by a truncation, which waits for the walk
// (Log.reads).
type segView struct {
	s    *segment
	size int64
	bad  map[int64]Corruption // replaced, never edited, by Scrub
}

// readSnapshot is what Read takes under mu, with the views of the
// segments it walks; nothing in it is touched by a writer afterwards.
type readSnapshot struct {
	// pos is where the walk of views[0] starts; indexN > 0 asks for it to be
	// found in the first indexN entries of the offset index file instead.
	pos    int64
	indexN int
	reads  *sync.WaitGroup
}

// maxReadRetries bounds how often a Read starts again because the segment
// list changed under it (retention, a cleaning's swap, a truncation).
const maxReadRetries = 100

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
//
// mu is held only to take a snapshot (readSnapshot); the header reads run
// outside it, so a slow disk stalls neither appends nor other readers.
func (l *Log) Read(offset int64, maxBytes int, upTo int64) (*Slice, error) {
	return l.read(offset, maxBytes, upTo, readMode{})
}

// ReadBelowStart is Read that may start below the log start, down to the
// first segment's base: a consensus log's entry may begin below a log
// start that DeleteRecords moved into the middle of its batch, and must
// still be sent whole to a replica that lacks it.
func (l *Log) ReadBelowStart(offset int64, maxBytes int, upTo int64) (*Slice, error) {
	return l.read(offset, maxBytes, upTo, readMode{belowStart: true})
}

// WalkBelowStart is ReadBelowStart for a walk of the batch headers, which
// steps over the batches a scrub marked corrupt: such a batch's length is
// sound (else it would be a different damage, which ends the log at
// recovery), so the offsets after it can be reached. A consensus log
// numbering its entries at open (node/replica/raftlog) must count the
// damaged batch too, as its peers do. Its regions are never sent: a reader
// of records uses Read or ReadBelowStart, which stop before the damage.
func (l *Log) WalkBelowStart(offset int64, upTo int64) (*Slice, error) {
	return l.read(offset, math.MaxInt, upTo, readMode{belowStart: true, overMarked: true})
}

// readMode is what a read may reach beyond Read's: below the log start
// (down to the first segment's base), and over batches a scrub marked.
type readMode struct{ belowStart, overMarked bool }

func (l *Log) read(offset int64, maxBytes int, upTo int64, mode readMode) (*Slice, error) {
	var err error
	for range maxReadRetries {
		var sl *Slice
		sl, err = l.readOnce(offset, maxBytes, upTo, mode)
		if !errors.Is(err, errFileGone) {
			return sl, err
		}
		// A segment in the snapshot was deleted or replaced before its file
		// was pinned: the segment list has changed, so read it again.
	}
	return nil, err
}

// snapshot takes what Read needs under mu: where to start, and views
// appended to views of the segments from the one holding offset. A read
// that needs no file gets its (empty) Slice instead. Unless it fails or
// returns a Slice, it counts the read in Log.reads; the caller is done
// with snap.reads.Done.
func (l *Log) snapshot(offset int64, upTo int64, views []segView, mode readMode) (snap readSnapshot, _ []segView, sl *Slice, _ int64, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return snap, nil, nil, upTo, ErrClosed
	}
	start, end := l.startLocked(), l.segs[len(l.segs)-1].st.next
	if mode.belowStart {
		start = l.segs[0].base
	}
	if offset < start || offset > end {
		return snap, nil, nil, upTo, fmt.Errorf("read %s at %d, log holds [%d, %d): %w", l.dir, offset, start, end, ErrOffsetOutOfRange)
	}
	upTo = min(upTo, end)
	if offset >= upTo {
		return snap, nil, NewSlice(nil, nil), upTo, nil
	}
	for _, s := range l.segs[l.segmentFor(offset):] {
		v := segView{s: s, size: s.st.size, bad: s.bad}
		if mode.overMarked {
			v.bad = nil
		}
		views = append(views, v)
	}
	if first := views[0].s; first.st.size > 0 {
		var ok bool
		snap.pos, snap.indexN, ok = first.lookupMem(offset)
		if ok {
			snap.indexN = 0
		}
	}
	snap.reads = l.reads
	snap.reads.Add(1)
	return snap, views, nil, upTo, nil
}

func (l *Log) readOnce(offset int64, maxBytes int, upTo int64, mode readMode) (*Slice, error) {
	// A read spans a segment or two: their views stay on the stack.
	var buf [4]segView
	snap, views, sl, upTo, err := l.snapshot(offset, upTo, buf[:0], mode)
	if sl != nil || err != nil {
		return sl, err
	}
	defer snap.reads.Done()

	var regions []Region
	var pinned []*fileHandle
	unpin := func() {
		for _, h := range pinned {
			h.release()
		}
	}
	fail := func(err error) (*Slice, error) {
		unpin()
		return nil, err
	}
	taken := int64(0)
	next := int64(0)
	done := false
	hr := newHeaderReader()
	defer hr.free()
	for i := 0; i < len(views) && !done; i++ {
		v := views[i]
		s := v.s
		if v.size == 0 {
			continue
		}
		f, err := s.log.acquire()
		if err != nil {
			if len(regions) > 0 && errors.Is(err, errFileGone) {
				break // what is already taken stays valid
			}
			return fail(fmt.Errorf("read %s: %w", l.dir, err))
		}
		pinned = append(pinned, s.log)
		pos := int64(0)
		if i == 0 {
			pos = snap.pos
			if snap.indexN > 0 {
				if pos, err = s.lookupFile(offset, snap.indexN); err != nil {
					return fail(fmt.Errorf("read %s: %w", l.dir, err))
				}
			}
		}
		first := pos
		hr.reset(f, v.size)
		var last int64 = -1
		for pos < v.size {
			h, err := hr.headerAt(pos)
			if err == nil && (h.Length < minBatchLength || h.Size() > v.size-pos) {
				err = fmt.Errorf("batch at %s:%d has length %d: %w", s.log.path, pos, h.Length, ErrCorrupt)
			}
			// A batch a scrub marked still has a sound length, so a read
			// may step over it to the offsets after it.
			if c, ok := v.bad[pos]; ok && err == nil && h.LastOffset() >= offset {
				err = fmt.Errorf("batch at %s:%d: %s: %w", s.log.path, pos, c.Reason, ErrCorrupt)
			}
			if err != nil {
				if pos > first || len(regions) > 0 {
					// Every whole batch before the damage is served; only a
					// read starting at the damaged batch fails.
					done = true
					break
				}
				return fail(fmt.Errorf("read %s at %d: %w", l.dir, offset, err))
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
			next = last + 1
		}
		if pos > first {
			regions = append(regions, Region{File: f, Position: first, Length: pos - first})
		} else {
			pinned = pinned[:len(pinned)-1]
			s.log.release()
		}
	}
	sl = NewSlice(regions, unpin)
	sl.Next = next
	return sl, nil
}

// segmentFor is the index of the segment holding offset. Called under mu.
func (l *Log) segmentFor(offset int64) int {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset })
	return max(i-1, 0)
}

// lookup is a position in the segment at or before the batch holding offset,
// from the offset index. Called under Log.mu or Log.appendMu.
func (s *segment) lookup(offset int64) (int64, error) {
	pos, n, ok := s.lookupMem(offset)
	if ok || n == 0 {
		return pos, nil
	}
	return s.lookupFile(offset, n)
}

// lookupMem is the part of lookup that needs no file: the read hint and the
// entries held in memory. Called under Log.mu (it reads memOff and pendOff,
// whose arrays the appender reuses). Unless ok, the position is in the first
// n entries of the index file (0 n: position 0).
func (s *segment) lookupMem(offset int64) (pos int64, n int, ok bool) {
	if s.st.offEntries == 0 || offset < s.base {
		return 0, 0, true
	}
	rel := uint32(min(offset-s.base, int64(^uint32(0))))
	if pos, ok := s.hinted(rel); ok {
		return pos, 0, true
	}
	if n := len(s.memOff) / offsetEntrySize; n > 0 && offsetEntryAt(s.memOff, 0).rel <= rel {
		// memOff holds every entry after its first, so the floor is in it.
		i := sort.Search(n, func(i int) bool { return offsetEntryAt(s.memOff, i).rel > rel })
		return int64(offsetEntryAt(s.memOff, i-1).pos), 0, true
	}
	if n := len(s.pendOff) / offsetEntrySize; n > 0 && offsetEntryAt(s.pendOff, 0).rel <= rel {
		i := sort.Search(n, func(i int) bool { return offsetEntryAt(s.pendOff, i).rel > rel })
		return int64(offsetEntryAt(s.pendOff, i-1).pos), 0, true
	}
	n = s.fileOffEntries()
	return 0, n, n == 0
}

// lookupFile searches the first n entries of the offset index file for the
// floor of offset. Needs no lock: the appender writes only past the entries
// a reader was told of, and a truncation rewrites the file only once every
// Read that could see the old entries is done.
func (s *segment) lookupFile(offset int64, n int) (int64, error) {
	rel := uint32(min(offset-s.base, int64(^uint32(0))))
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
// it). If no batch qualifies it returns EndOffset() and -1. Like Read, it
// holds mu only for a snapshot and reads the files outside it.
func (l *Log) OffsetForTime(ts int64) (offset int64, timestamp int64, err error) {
	for range maxReadRetries {
		offset, timestamp, err = l.offsetForTimeOnce(ts)
		if !errors.Is(err, errFileGone) {
			return offset, timestamp, err
		}
	}
	return 0, 0, err
}

// timeSearch is where OffsetForTime's walk of one segment starts: pos, or
// (unless found) the floor of ts in the first timeN time index entries, then
// of that entry's offset in the first offN offset index entries, or (rel >=
// 0) of offset base+rel in them.
type timeSearch struct {
	ts          int64
	pos         int64
	found       bool
	rel         int64
	timeN, offN int
}

func (l *Log) offsetForTimeOnce(ts int64) (int64, int64, error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return 0, 0, ErrClosed
	}
	var s *segment
	for _, c := range l.segs {
		if c.st.size > 0 && c.st.maxTS >= ts {
			s = c
			break
		}
	}
	if s == nil {
		end := l.segs[len(l.segs)-1].st.next
		l.mu.RUnlock()
		return end, -1, nil
	}
	size, maxTS := s.st.size, s.st.maxTS
	search := s.timeLookupMem(ts)
	reads := l.reads
	reads.Add(1)
	l.mu.RUnlock()
	defer reads.Done()

	pos, err := s.timeLookupFile(search)
	if err != nil {
		return 0, 0, fmt.Errorf("offset for time %d in %s: %w", ts, l.dir, err)
	}
	f, err := s.log.acquire()
	if err != nil {
		return 0, 0, fmt.Errorf("offset for time %d in %s: %w", ts, l.dir, err)
	}
	defer s.log.release()
	for pos < size {
		h, herr := readHeaderAt(f, pos)
		if herr == nil && h.Length < minBatchLength {
			herr = fmt.Errorf("batch at %s:%d has length %d", s.log.path, pos, h.Length)
		}
		if herr != nil {
			return 0, 0, fmt.Errorf("offset for time %d in %s: %w", ts, l.dir, herr)
		}
		if h.MaxTimestamp >= ts {
			return h.BaseOffset, h.MaxTimestamp, nil
		}
		pos += h.Size()
	}
	// maxTS said a batch qualifies; the index and log disagree.
	return 0, 0, fmt.Errorf("offset for time %d in %s: segment %d has no batch at its newest timestamp %d", ts, l.dir, s.base, maxTS)
}

// timeLookupMem is the part of the search for a position before which no
// batch has a timestamp >= ts that needs no file. Called under Log.mu.
func (s *segment) timeLookupMem(ts int64) timeSearch {
	if n := len(s.pendTime) / timeEntrySize; n > 0 && timeEntryAt(s.pendTime, 0).ts < ts {
		i := sort.Search(n, func(i int) bool { return timeEntryAt(s.pendTime, i).ts >= ts })
		e := timeEntryAt(s.pendTime, i-1)
		pos, offN, ok := s.lookupMem(s.base + int64(e.rel))
		return timeSearch{pos: pos, found: ok, rel: int64(e.rel), offN: offN}
	}
	n := s.fileTimeEntries()
	if n == 0 {
		return timeSearch{found: true}
	}
	return timeSearch{ts: ts, rel: -1, timeN: n, offN: s.fileOffEntries()}
}

// timeLookupFile finishes what timeLookupMem began, in the index files; no
// lock is needed (see lookupFile).
func (s *segment) timeLookupFile(q timeSearch) (int64, error) {
	if q.found {
		return q.pos, nil
	}
	if q.rel < 0 {
		f, err := s.tsIdx.acquire()
		if err != nil {
			return 0, err
		}
		e, ok, err := floorTimeEntry(f, q.timeN, q.ts)
		s.tsIdx.release()
		if err != nil || !ok {
			return 0, err
		}
		q.rel = int64(e.rel)
	}
	if q.offN == 0 {
		return 0, nil
	}
	return s.lookupFile(s.base+q.rel, q.offN)
}
