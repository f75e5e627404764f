package partition

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// EnforceRetention deletes the oldest closed segments whose newest timestamp
// is older than RetentionAge (by Config.Clock), and then more of the oldest
// while the log would stay larger than RetentionBytes without them, and those
// wholly below a log start DeleteRecordsBefore moved up. The active segment
// is never deleted. The log start offset moves up to the first
// remaining segment, and the leader-epoch cache with it. Slices being sent
// from a deleted segment stay readable until released.
func (l *Log) EnforceRetention() (deleted int, err error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	cfg := l.cfg
	closedSegs := l.segs[:len(l.segs)-1]
	byAge := 0
	if cfg.RetentionAge >= 0 {
		cutoff := cfg.Clock().Add(-cfg.RetentionAge).UnixMilli()
		if cfg.RetentionAge > time.Duration(1<<62) {
			cutoff = -1 << 62 // nothing is that old; avoid overflow
		}
		for byAge < len(closedSegs) && closedSegs[byAge].st.maxTS < cutoff {
			byAge++
		}
	}
	bySize := 0
	if cfg.RetentionBytes >= 0 {
		excess := -cfg.RetentionBytes
		for _, s := range l.segs {
			excess += s.st.size
		}
		for bySize < len(closedSegs) && excess-closedSegs[bySize].st.size >= 0 {
			excess -= closedSegs[bySize].st.size
			bySize++
		}
	}
	n := max(byAge, bySize, l.belowLogStart(closedSegs))
	if n == 0 {
		return 0, nil
	}
	doomed := closedSegs[:n]
	kept := append([]*segment(nil), l.segs[n:]...)
	oldEpochs := l.epochs
	epochs := truncateEpochs(oldEpochs, kept[0].base, kept[len(kept)-1].st.next)
	l.mu.Lock()
	l.segs = kept
	l.epochs = epochs
	l.segGen++ // a cleaning working on the deleted segments must not swap them back
	l.mu.Unlock()
	var errs []error
	for _, s := range doomed {
		if err := s.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	// Unless a rewrite failed, the epoch file holds the cache as it was, so
	// an unchanged cache needs no rewrite and its two fsyncs stay off the
	// append path.
	if l.epochsStale || !slices.Equal(epochs, oldEpochs) {
		err := writeFileAtomic(l.dir, leaderEpochFile, encodeEpochs(epochs))
		if err != nil {
			errs = append(errs, err)
		}
		l.epochsStale = err != nil
	}
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("retention in %s: %w", l.dir, err)
	}
	return n, nil
}

// TruncateTo removes every batch holding an offset at or past offset, and the
// leader epochs that start there, for a replica whose log diverged. Whole
// batches go: if offset falls inside a batch, the log ends at that batch's
// base. Below the log start it empties the log and restarts it at offset.
// Slices reaching past the cut must not be outstanding; callers only cut
// above the high watermark, which no Slice crosses.
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
	// The checkpoints go first, durably, so that they never vouch for
	// bytes about to be cut: the recovery point down to the base of the
	// segment the cut falls in (else the next Open would trust whatever is
	// appended there later without walking it), the leader epochs cut at
	// offset (else recovery would check the batches appended there later
	// against the epochs of the batches cut). If they cannot be saved,
	// nothing is cut.
	newStart := l.segs[0].base
	if offset <= newStart {
		newStart = offset // the log restarts at offset
	}
	if rp := min(l.segs[l.segmentFor(offset)].base, offset); rp < l.recoveryPoint {
		if err := l.writeRecoveryPoint(recoveryPoint{Offset: rp, CleanBase: -1}); err != nil {
			return fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err)
		}
		l.recoveryPoint = rp
	}
	onDisk := l.epochs
	if pre := truncateEpochs(l.epochs, newStart, offset); l.epochsStale || !slices.Equal(pre, l.epochs) {
		if err := writeFileAtomic(l.dir, leaderEpochFile, encodeEpochs(pre)); err != nil {
			return fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err)
		}
		onDisk, l.epochsStale = pre, false
	}
	if err := l.lowerLogStart(offset); err != nil {
		return fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.truncateLocked(offset)
	if cerr := l.forgetCleanedAbove(offset); cerr != nil && err == nil {
		err = cerr
	}
	end := l.segs[len(l.segs)-1].st.next
	l.clampLogStart(end) // below offset only when the cut fell inside a batch
	l.epochs = truncateEpochs(l.epochs, l.segs[0].base, end)
	if !slices.Equal(l.epochs, onDisk) {
		// Only an epoch starting at the cut batch's base, which the file
		// may keep: Open trims epochs at the log end, and the next Append
		// rewrites a stale file before it writes a batch.
		l.epochsStale = writeFileAtomic(l.dir, leaderEpochFile, encodeEpochs(l.epochs)) != nil
	}
	if l.recoveryPoint > end {
		l.recoveryPoint = end
		if werr := l.writeRecoveryPoint(recoveryPoint{Offset: end, CleanBase: -1}); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		return fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err)
	}
	return nil
}

// truncateLocked cuts the segments; called with appendMu and mu held.
func (l *Log) truncateLocked(offset int64) error {
	k := l.segmentFor(offset)
	if offset <= l.segs[0].base {
		k = -1 // everything goes
	} else if l.segs[k].base == offset {
		k-- // the segment starting at offset goes whole; the one before ends there
	}
	for _, s := range l.segs[k+1:] {
		if err := s.remove(); err != nil {
			return err
		}
	}
	if k < 0 {
		s, err := createSegment(l.dir, offset, l.files)
		if err != nil {
			return err
		}
		s.st.dirty = true
		l.segs = []*segment{s}
		return nil
	}
	l.segs = l.segs[: k+1 : k+1]
	s := l.segs[k]
	if s.st.next <= offset {
		return nil
	}
	pos, err := s.lookup(offset)
	if err != nil {
		return err
	}
	f, err := s.log.acquire()
	if err != nil {
		return err
	}
	defer s.log.release()
	for pos < s.st.size {
		h, err := readHeaderAt(f, pos)
		if err != nil {
			return err
		}
		if h.LastOffset() >= offset {
			break
		}
		pos += h.Size()
	}
	if err := f.Truncate(pos); err != nil {
		return fmt.Errorf("truncate %s: %w", s.log.path, err)
	}
	// Rebuild the segment's indexes and state from what remains; the bytes
	// were validated when appended, so every epoch is accepted.
	if _, err = s.recover(l.cfg.IndexIntervalBytes, func(int64, int32) bool { return true }, l.gapsAllowed(s.base), nil); err != nil {
		return err
	}
	// The walk starts segment.ms anew, as Open does; left at zero, the
	// next append would roll at once.
	s.st.rollStart = l.cfg.Clock().UnixMilli()
	return nil
}
