package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/spool-log/spool/internal/recordbatch"
)

// This file is the replicated half of the log's write API: appends whose
// offsets and epoch a consensus log decided (node/replica/raftlog), not this
// log, and a restart of the whole log at an offset a snapshot names. It is
// kept apart from append.go so that the single-copy path and this one can
// change independently; both take the same locks in the same order
// (flushMu, appendMu, mu).

// ErrOffsetMismatch refuses an AppendAt whose base offset is not the log end:
// a replicated append must land exactly where the leader numbered it.
var ErrOffsetMismatch = errors.New("append offset is not the log end")

// AppendAt appends batches (one or more RecordBatch v2, back to back) with
// their offsets numbered contiguously from baseOffset, which must be the log
// end (else ErrOffsetMismatch), and their partition leader epoch set to
// leaderEpoch. Those two fields, which the CRC does not cover, are the only
// bytes it writes into the caller's buffer: unlike Append it never stamps
// LogAppendTime nor touches attributes, and does not check keys of a
// compacted log, because a replicated batch was stamped and checked once, by
// the leader, and every replica must store the same bytes. A leaderEpoch
// below the log's latest is ErrStaleLeaderEpoch, as for Append.
func (l *Log) AppendAt(batches []byte, baseOffset int64, leaderEpoch int32) (AppendInfo, error) {
	if len(batches) > maxSegmentBytes {
		return AppendInfo{}, &BatchError{Kind: Invalid, Reason: fmt.Sprintf("append of %d bytes exceeds a segment", len(batches))}
	}
	if leaderEpoch < 0 {
		return AppendInfo{}, fmt.Errorf("append to %s at %d: leader epoch %d: %w", l.dir, baseOffset, leaderEpoch, ErrStaleLeaderEpoch)
	}
	hs, records, err := validatedBatches(batches, nil)
	if err != nil {
		return AppendInfo{}, err
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return AppendInfo{}, ErrClosed
	}
	if end := l.segs[len(l.segs)-1].st.next; baseOffset != end {
		return AppendInfo{}, fmt.Errorf("append to %s at %d, log end %d: %w", l.dir, baseOffset, end, ErrOffsetMismatch)
	}
	now := l.cfg.Clock().UnixMilli()
	active, err := l.activeFor(leaderEpoch, int64(len(batches)), records, now)
	if err != nil {
		return AppendInfo{}, err
	}
	end := active.st.next
	// Offsets and epoch only: the leader stamped everything else once (a
	// LogAppendTime attribute included, which stampBatches would clear).
	next := end
	for i := range hs {
		b := batches[hs[i].pos : hs[i].pos+int(hs[i].h.Size())]
		h := &hs[i].h
		h.BaseOffset, h.PartitionLeaderEpoch = next, leaderEpoch
		binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(next))
		binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(leaderEpoch))
		next = h.LastOffset() + 1
	}
	info := AppendInfo{BaseOffset: end, LastOffset: next - 1, LogAppendTime: -1, RecordCount: int(records), Bytes: len(batches)}
	if err := l.saveEpochFor(leaderEpoch, end); err != nil {
		return AppendInfo{}, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	if err := l.writeAndPublish(active, batches, hs, now); err != nil {
		return AppendInfo{}, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	l.armFlushTimer()
	return info, nil
}

// RestartAt empties the log and restarts it at offset, which may lie past the
// log end: a replica whose log a snapshot replaces ("the log start moved past
// everything you hold") keeps numbering records where the leader does. The
// checkpoints go first, durably (recovery point down to the first segment,
// no leader epochs, the log start no higher than offset), so a crash part way
// leaves a log that Open walks and trusts no more than it holds; the caller
// records the snapshot after this returns and, finding on restart a log end
// short of it, calls RestartAt again.
func (l *Log) RestartAt(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("restart %s at %d: negative offset", l.dir, offset)
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if err := l.unmarkClean(); err != nil {
		return err
	}
	if rp := min(l.segs[0].base, offset); rp < l.recoveryPoint {
		if err := l.writeRecoveryPoint(recoveryPoint{Offset: rp, CleanBase: -1}); err != nil {
			return fmt.Errorf("restart %s at %d: %w", l.dir, offset, err)
		}
		l.recoveryPoint = rp
	}
	if len(l.epochs) > 0 || l.epochsStale {
		if err := writeFileAtomic(l.dir, leaderEpochFile, encodeEpochs(nil)); err != nil {
			return fmt.Errorf("restart %s at %d: %w", l.dir, offset, err)
		}
		l.epochsStale = false
	}
	if err := l.lowerLogStart(offset); err != nil {
		return fmt.Errorf("restart %s at %d: %w", l.dir, offset, err)
	}
	// As a truncation does (truncate.go): the new segment list is published
	// under mu, reads that may still walk the old one are waited for, and
	// only then are files removed and created, with mu not held.
	fresh := newSegment(l.dir, offset, l.files)
	fresh.st.dirty = true
	fresh.st.rollStart = l.cfg.Clock().UnixMilli()
	l.mu.Lock()
	old := l.segs
	l.segs = []*segment{fresh}
	l.epochs = nil
	l.segGen++ // a cleaning working on the old segments must not swap them back
	cleanerLowered := l.cleanedTo > offset
	if cleanerLowered {
		l.cleanedTo = offset
	}
	reads := l.reads
	l.reads = new(sync.WaitGroup)
	l.mu.Unlock()
	reads.Wait()
	for _, s := range old {
		if err := s.remove(); err != nil {
			return fmt.Errorf("restart %s at %d: %w", l.dir, offset, err)
		}
	}
	if err := fresh.createFiles(); err != nil {
		// Appends fail on the missing files until a restart walks the
		// directory again.
		return fmt.Errorf("restart %s at %d: %w", l.dir, offset, err)
	}
	if cleanerLowered {
		if err := writeCleanerCheckpoint(l.dir, l.cleanedTo, l.deleteHorizon); err != nil {
			return fmt.Errorf("restart %s at %d: %w", l.dir, offset, err)
		}
	}
	if err := l.writeRecoveryPoint(recoveryPoint{Offset: offset, CleanBase: -1}); err != nil {
		return fmt.Errorf("restart %s at %d: %w", l.dir, offset, err)
	}
	l.recoveryPoint = offset
	return nil
}

// AppendCopied appends batches exactly as another replica's log holds them,
// each keeping its base offset and partition leader epoch (the CRC covers
// neither, so nothing is rewritten): a replica given its leader's snapshot
// copies the records below the Raft log this way (node/replica/raftlog).
// The first batch may start past the log end, and later ones may leave
// gaps, as the cleaner leaves them, but only in a compacted log
// (Config.Compact); a gap elsewhere is ErrOffsetMismatch. Epochs must not
// go down. end, if past the last batch, becomes the log end (a cleaned
// tail: the next append lands there), in a new empty segment.
func (l *Log) AppendCopied(batches []byte, end int64) error {
	var hs []batchAt
	for pos := 0; pos < len(batches); {
		// As the cleaner writes them: a batch may hold fewer records than
		// its offset range.
		h, err := recordbatch.Check(batches[pos:], true)
		if err != nil {
			err.Offset += pos
			return err
		}
		hs = append(hs, batchAt{pos, h})
		pos += int(h.Size())
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return ErrClosed
	}
	gaps := l.cfg.Compact
	now := l.cfg.Clock().UnixMilli()
	for i := range hs {
		h := hs[i].h
		b := batches[hs[i].pos : hs[i].pos+int(h.Size())]
		next := l.segs[len(l.segs)-1].st.next
		if !followsAt(h.BaseOffset, next, gaps) {
			return fmt.Errorf("copy batch at %d to %s, log end %d: %w", h.BaseOffset, l.dir, next, ErrOffsetMismatch)
		}
		// What the batch adds to the segment's relative offsets, gap
		// included, decides a roll as its records would.
		active, err := l.activeFor(h.PartitionLeaderEpoch, int64(len(b)), h.LastOffset()+1-next, now)
		if err != nil {
			return fmt.Errorf("copy batch at %d to %s: %w", h.BaseOffset, l.dir, err)
		}
		if err := l.saveEpochFor(h.PartitionLeaderEpoch, h.BaseOffset); err != nil {
			return fmt.Errorf("copy batch at %d to %s: %w", h.BaseOffset, l.dir, err)
		}
		if err := l.writeAndPublish(active, b, []batchAt{{0, h}}, now); err != nil {
			return fmt.Errorf("copy batch at %d to %s: %w", h.BaseOffset, l.dir, err)
		}
	}
	if next := l.segs[len(l.segs)-1].st.next; end > next {
		if !gaps {
			return fmt.Errorf("copy to %s: end %d past the last batch's %d: %w", l.dir, end, next, ErrOffsetMismatch)
		}
		if _, err := l.roll(end); err != nil {
			return fmt.Errorf("copy to %s: %w", l.dir, err)
		}
	}
	l.armFlushTimer()
	return nil
}
