package partition

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// TruncateTo removes every batch holding an offset at or past offset, and the
// leader epochs that start there, for a replica whose log diverged. Whole
// batches go: if offset falls inside a batch, the log ends at that batch's
// base. Below the log start it empties the log and restarts it at offset.
// Slices reaching past the cut must not be outstanding; callers only cut
// above the high watermark, which no Slice crosses.
//
// It is a writer: appends wait for it on appendMu. Readers do not. The new
// segment list is worked out first (planCut, reading headers without mu),
// published under mu in one step (publishCut), and the files are cut only
// once every Read that saw the old list is done (Log.reads), so no reader
// walks bytes past the cut while they are cut or written anew.
func (l *Log) TruncateTo(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("truncate %s to %d: negative offset", l.dir, offset)
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if offset >= l.segs[len(l.segs)-1].st.next {
		return nil
	}
	if err := l.unmarkClean(); err != nil {
		return err
	}
	onDisk, err := l.checkpointBeforeCut(offset)
	if err != nil {
		return fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err)
	}
	c, err := l.planCut(offset)
	if err != nil {
		return fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err)
	}
	l.publishCut(&c).Wait()
	if err := l.applyCut(&c, onDisk); err != nil {
		return fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err)
	}
	return nil
}

// checkpointBeforeCut saves, durably and before anything is cut, the
// checkpoints that must never vouch for bytes about to go: the recovery
// point down to the base of the segment the cut falls in (else the next
// Open would trust whatever is appended there later without walking it),
// the leader epochs cut at offset (else recovery would check the batches
// appended there later against the epochs of the batches cut), and a log
// start above the cut. If they cannot be saved, nothing is cut. It returns
// the epochs the file now holds. Called with appendMu held.
func (l *Log) checkpointBeforeCut(offset int64) (onDisk []EpochEntry, err error) {
	newStart := l.segs[0].base
	if offset <= newStart {
		newStart = offset // the log restarts at offset
	}
	if rp := min(l.segs[l.segmentFor(offset)].base, offset); rp < l.recoveryPoint {
		if err := l.writeRecoveryPoint(recoveryPoint{Offset: rp, CleanBase: -1}); err != nil {
			return nil, err
		}
		l.recoveryPoint = rp
	}
	onDisk = l.epochs
	if pre := truncateEpochs(l.epochs, newStart, offset); l.epochsStale || !slices.Equal(pre, l.epochs) {
		if err := writeFileAtomic(l.dir, leaderEpochFile, encodeEpochs(pre)); err != nil {
			return nil, err
		}
		onDisk, l.epochsStale = pre, false
	}
	if err := l.lowerLogStart(offset); err != nil {
		return nil, err
	}
	return onDisk, nil
}

// cut is a truncation worked out before it is published.
type cut struct {
	offset int64
	segs   []*segment // the segment list after the cut
	drop   []*segment // segments that go whole
	// fresh is set when everything goes: segs is one new segment at
	// offset, whose files are created once the old ones are gone.
	fresh bool
	// rebuilt, unless nil, replaces the last kept segment, whose log is
	// cut at pos: its state and index entries are those of the bytes
	// before pos, all held as pending (none in the index files, which are
	// emptied with the cut), so nothing reads an index file meanwhile.
	rebuilt *segment
	pos     int64

	cleanerLowered  bool
	logStartClamped bool
}

// planCut works out the segment list after a cut at offset. It reads the
// headers of the segment the cut falls in, without mu: appendMu keeps every
// writer out, and readers change nothing. Called with appendMu held.
func (l *Log) planCut(offset int64) (cut, error) {
	c := cut{offset: offset}
	k := l.segmentFor(offset)
	if offset <= l.segs[0].base {
		k = -1 // everything goes
	} else if l.segs[k].base == offset {
		k-- // the segment starting at offset goes whole; the one before ends there
	}
	c.drop = l.segs[k+1:]
	if k < 0 {
		s := newSegment(l.dir, offset, l.files)
		s.st.dirty = true
		c.segs, c.fresh = []*segment{s}, true
		return c, nil
	}
	c.segs = slices.Clone(l.segs[:k+1])
	s := l.segs[k]
	if s.st.next <= offset {
		return c, nil
	}
	ns, pos, err := l.rebuildBefore(s, offset)
	if err != nil {
		return c, err
	}
	c.segs[k], c.rebuilt, c.pos = ns, ns, pos
	return c, nil
}

// rebuildBefore walks s's batch headers up to the first batch holding
// offset and returns a segment, sharing s's files, whose state and index
// entries are those of the batches before it, and the position it starts
// at. The bytes were validated when appended, so headers suffice; they are
// tracked as appends track them, so the index is the one appends build.
func (l *Log) rebuildBefore(s *segment, offset int64) (*segment, int64, error) {
	f, err := s.log.acquire()
	if err != nil {
		return nil, 0, err
	}
	defer s.log.release()
	hr := newHeaderReader()
	defer hr.free()
	size := s.st.size
	hr.reset(f, size)
	st := emptySegState(s.base)
	var ob, tb []byte
	pos := int64(0)
	for pos < size {
		h, err := hr.headerAt(pos)
		if err != nil {
			return nil, 0, err
		}
		if h.Length < minBatchLength || h.Size() > size-pos {
			return nil, 0, fmt.Errorf("batch at %s:%d has length %d: %w", s.log.path, pos, h.Length, ErrCorrupt)
		}
		if h.LastOffset() >= offset {
			break
		}
		ob, tb = st.track(s.base, pos, h, l.cfg.IndexIntervalBytes, ob, tb)
		pos += h.Size()
	}
	st.dirty = true
	// The walk starts segment.ms anew, as Open does; left at zero, the next
	// append would roll at once.
	st.rollStart = l.cfg.Clock().UnixMilli()
	ns := &segment{base: s.base, log: s.log, offIdx: s.offIdx, tsIdx: s.tsIdx, st: st,
		pendOff: ob, pendTime: tb, memOff: withMemEntries(nil, ob)}
	// A scrub's findings past the cut are about bytes that go.
	for p, c := range s.bad {
		if p < pos {
			if ns.bad == nil {
				ns.bad = make(map[int64]Corruption)
			}
			ns.bad[p] = c
		}
	}
	return ns, pos, nil
}

// publishCut makes the cut what readers see, in one step under mu, and
// returns the reads that may still be walking the old segment list. Called
// with appendMu held.
func (l *Log) publishCut(c *cut) *sync.WaitGroup {
	end := c.segs[len(c.segs)-1].st.next
	l.mu.Lock()
	defer l.mu.Unlock()
	l.segs = c.segs
	l.segGen++ // a cleaning working on the cut segments must not swap them back
	if l.cleanedTo > c.offset {
		// Appends past the cut count as dirty.
		l.cleanedTo, c.cleanerLowered = c.offset, true
	}
	if l.logStart > end {
		// Below offset only when the cut fell inside a batch.
		l.logStart, c.logStartClamped = end, true
	}
	l.epochs = truncateEpochs(l.epochs, l.segs[0].base, end)
	old := l.reads
	l.reads = new(sync.WaitGroup)
	return old
}

// applyCut cuts the files once no reader can reach what goes, and brings
// the checkpoints down to the new end. onDisk is what the epoch file holds.
// Called with appendMu held, not mu.
func (l *Log) applyCut(c *cut, onDisk []EpochEntry) error {
	var errs []error
	for _, s := range c.drop {
		if err := s.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.fresh {
		if err := c.segs[0].createFiles(); err != nil {
			errs = append(errs, err)
		}
	}
	if s := c.rebuilt; s != nil {
		if err := cutLog(s, c.pos); err != nil {
			errs = append(errs, err)
		}
		// The entries are all pending: the files restart empty.
		for _, h := range []*fileHandle{s.offIdx, s.tsIdx} {
			if err := rewriteFile(h, nil); err != nil {
				errs = append(errs, err)
			}
		}
	}
	end := c.segs[len(c.segs)-1].st.next
	if !slices.Equal(l.epochs, onDisk) {
		// Only an epoch starting at the cut batch's base, which the file
		// may keep: Open trims epochs at the log end, and the next Append
		// rewrites a stale file before it writes a batch.
		l.epochsStale = writeFileAtomic(l.dir, leaderEpochFile, encodeEpochs(l.epochs)) != nil
	}
	if c.logStartClamped {
		// If the rewrite fails, Append rewrites it before its batch.
		l.logStartStale = writeFileAtomic(l.dir, logStartOffsetFile, encodeLogStart(end)) != nil
	}
	if c.cleanerLowered {
		if err := writeCleanerCheckpoint(l.dir, l.cleanedTo, l.deleteHorizon); err != nil {
			errs = append(errs, err)
		}
	}
	if l.recoveryPoint > end {
		l.recoveryPoint = end
		if err := l.writeRecoveryPoint(recoveryPoint{Offset: end, CleanBase: -1}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// cutLog truncates a segment's log file at pos.
func cutLog(s *segment, pos int64) error {
	f, err := s.log.acquire()
	if err != nil {
		return err
	}
	defer s.log.release()
	if err := f.Truncate(pos); err != nil {
		return fmt.Errorf("truncate %s: %w", s.log.path, err)
	}
	return nil
}
