package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
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
	active := l.segs[len(l.segs)-1]
	end := active.st.next
	if baseOffset != end {
		return AppendInfo{}, fmt.Errorf("append to %s at %d, log end %d: %w", l.dir, baseOffset, end, ErrOffsetMismatch)
	}
	if n := len(l.epochs); n > 0 && leaderEpoch < l.epochs[n-1].Epoch {
		return AppendInfo{}, fmt.Errorf("append to %s: epoch %d after %d: %w", l.dir, leaderEpoch, l.epochs[n-1].Epoch, ErrStaleLeaderEpoch)
	}
	cfg := l.cfg
	now := cfg.Clock().UnixMilli()
	if err := l.unmarkClean(); err != nil {
		return AppendInfo{}, err
	}
	if err := l.saveStaleLogStart(); err != nil {
		return AppendInfo{}, err
	}
	if active.st.size > 0 && (active.st.size+int64(len(batches)) > cfg.SegmentBytes ||
		now-active.st.rollStart >= cfg.SegmentAge.Milliseconds() ||
		end+records-active.base > math.MaxUint32) {
		if active, err = l.roll(end); err != nil {
			return AppendInfo{}, err
		}
	}

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

	// The epoch cache is durable before the batches it vouches for, as in
	// Append.
	newEpoch := len(l.epochs) == 0 || leaderEpoch > l.epochs[len(l.epochs)-1].Epoch
	if newEpoch || l.epochsStale {
		epochs := l.epochs[:len(l.epochs):len(l.epochs)]
		if newEpoch {
			epochs = append(epochs, EpochEntry{Epoch: leaderEpoch, StartOffset: end})
		}
		if err := writeFileAtomic(l.dir, leaderEpochFile, encodeEpochs(epochs)); err != nil {
			return AppendInfo{}, fmt.Errorf("append to %s: %w", l.dir, err)
		}
		l.mu.Lock()
		l.epochs = epochs
		l.mu.Unlock()
		l.epochsStale = false
	}

	st := active.st
	if st.size == 0 {
		st.rollStart = now
	}
	ob, tb := l.entryBuf[:0], l.timeBuf[:0]
	for _, b := range hs {
		ob, tb = st.track(active.base, active.st.size+int64(b.pos), b.h, cfg.IndexIntervalBytes, ob, tb)
	}
	l.entryBuf, l.timeBuf = ob, tb
	if err := l.writeAppend(active, batches, cfg.Flush == FlushEveryAppend); err != nil {
		return AppendInfo{}, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	pendOff, err := stageIndex(active.offIdx, active.pendOff, ob, active.fileOffEntries(), offsetEntrySize)
	var pendTime []byte
	if err == nil {
		pendTime, err = stageIndex(active.tsIdx, active.pendTime, tb, active.fileTimeEntries(), timeEntrySize)
	}
	if err != nil {
		l.undoAppend(active)
		return AppendInfo{}, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	st.dirty = true
	memOff := active.memOff
	if len(ob) > 0 {
		memOff = withMemEntries(memOff, ob)
	}
	l.mu.Lock()
	active.st = st
	active.pendOff, active.pendTime = pendOff, pendTime
	active.memOff = memOff
	l.mu.Unlock()
	if cfg.Flush == FlushInterval && l.flushTimer == nil {
		l.bg.Add(1)
		l.flushTimer = time.AfterFunc(cfg.FlushEvery, func() {
			defer l.bg.Done()
			l.appendMu.Lock()
			l.flushTimer = nil
			l.appendMu.Unlock()
			l.Flush()
		})
	}
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
	l.mu.Lock()
	defer l.mu.Unlock()
	l.epochs = nil
	for _, s := range l.segs {
		if err := s.remove(); err != nil {
			return fmt.Errorf("restart %s at %d: %w", l.dir, offset, err)
		}
	}
	s, err := createSegment(l.dir, offset, l.files)
	if err != nil {
		// The segment list is never empty; appends fail on the missing
		// files until a restart walks the directory again.
		l.segs = []*segment{newSegment(l.dir, offset, l.files)}
		return fmt.Errorf("restart %s at %d: %w", l.dir, offset, err)
	}
	s.st.dirty = true
	s.st.rollStart = l.cfg.Clock().UnixMilli()
	l.segs = []*segment{s}
	if err := l.forgetCleanedAbove(offset); err != nil {
		return fmt.Errorf("restart %s at %d: %w", l.dir, offset, err)
	}
	if err := l.writeRecoveryPoint(recoveryPoint{Offset: offset, CleanBase: -1}); err != nil {
		return fmt.Errorf("restart %s at %d: %w", l.dir, offset, err)
	}
	l.recoveryPoint = offset
	return nil
}
