package partition

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/spool-log/spool/internal/atomicfile"
	"github.com/spool-log/spool/internal/recordbatch"
)

// Append validates batches (one or more RecordBatch v2, back to back), then
// writes them all or none. It rewrites each batch's baseOffset and partition
// leader epoch in place in the caller's buffer, which the CRC does not cover;
// under LogAppendTime it also sets the timestamp-type attribute and
// maxTimestamp to the broker's clock and recomputes the CRC. A refused batch
// returns a *BatchError and nothing reaches disk. leaderEpoch -1 means none;
// an epoch below the log's latest is ErrStaleLeaderEpoch. A compacted log
// (Config.Compact) also refuses records without a key.
func (l *Log) Append(batches []byte, leaderEpoch int32) (AppendInfo, error) {
	// Validate before taking the lock: CRCs of concurrent produces to one
	// partition need not queue up.
	// A produce brings one batch: its header stays on the stack.
	var one [1]batchAt
	hs, records, err := l.checkAppend(batches, leaderEpoch, one[:0])
	if err != nil {
		return AppendInfo{}, err
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	cfg := l.cfg
	now := cfg.Clock().UnixMilli()
	active, err := l.activeFor(leaderEpoch, int64(len(batches)), records, now)
	if err != nil {
		return AppendInfo{}, err
	}
	end := active.st.next
	info := AppendInfo{BaseOffset: end, LogAppendTime: -1, RecordCount: int(records), Bytes: len(batches)}
	if cfg.LogAppendTime {
		info.LogAppendTime = now
	}
	info.LastOffset = stampBatches(batches, hs, end, leaderEpoch, cfg.LogAppendTime, now) - 1
	if err := l.saveEpochFor(leaderEpoch, end); err != nil {
		return AppendInfo{}, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	if err := l.writeAndPublish(active, batches, hs, now); err != nil {
		return AppendInfo{}, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	l.armFlushTimer()
	return info, nil
}

// checkAppend is what Append checks before taking any lock: the size and
// epoch asked, every batch (validatedBatches, whose headers it appends to
// hs), and the keys of a compacted log.
func (l *Log) checkAppend(batches []byte, leaderEpoch int32, hs []batchAt) ([]batchAt, int64, error) {
	if len(batches) > maxSegmentBytes {
		return nil, 0, &BatchError{Kind: Invalid, Reason: fmt.Sprintf("append of %d bytes exceeds a segment", len(batches))}
	}
	if leaderEpoch < -1 {
		return nil, 0, fmt.Errorf("append to %s: leader epoch %d: %w", l.dir, leaderEpoch, ErrStaleLeaderEpoch)
	}
	hs, records, err := validatedBatches(batches, hs)
	if err != nil {
		return nil, 0, err
	}
	if cfg := l.Config(); cfg.Compact {
		if err := checkKeys(batches, hs, cfg.Codecs); err != nil {
			return nil, 0, err
		}
	}
	return hs, records, nil
}

// activeFor is the segment an append of size bytes and records records
// goes to, rolled first if the active one is full or old; it refuses a
// closed log or a stale epoch, and first brings the checkpoints that a
// change invalidates up to date. Called with appendMu held.
func (l *Log) activeFor(leaderEpoch int32, size, records, now int64) (*segment, error) {
	if l.closed {
		return nil, ErrClosed
	}
	if n := len(l.epochs); n > 0 && leaderEpoch < l.epochs[n-1].Epoch {
		return nil, fmt.Errorf("append to %s: epoch %d after %d: %w", l.dir, leaderEpoch, l.epochs[n-1].Epoch, ErrStaleLeaderEpoch)
	}
	if err := l.unmarkClean(); err != nil {
		return nil, err
	}
	if err := l.saveStaleLogStart(); err != nil {
		return nil, err
	}
	active := l.segs[len(l.segs)-1]
	end := active.st.next
	if active.st.size > 0 && (active.st.size+size > l.cfg.SegmentBytes ||
		now-active.st.rollStart >= l.cfg.SegmentAge.Milliseconds() ||
		end+records-active.base > math.MaxUint32) {
		return l.roll(end)
	}
	return active, nil
}

// stampBatches assigns offsets from next to the batches and stamps each
// with the leader epoch and, under LogAppendTime, the broker's clock,
// recomputing the CRC where a covered field changed. It returns the offset
// after the last record.
func stampBatches(batches []byte, hs []batchAt, next int64, leaderEpoch int32, logAppendTime bool, now int64) int64 {
	for i := range hs {
		b := batches[hs[i].pos : hs[i].pos+int(hs[i].h.Size())]
		h := &hs[i].h
		h.BaseOffset, h.PartitionLeaderEpoch = next, leaderEpoch
		binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(next))
		binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(leaderEpoch))
		switch {
		case logAppendTime:
			h.Attributes |= attrTimestampType
			h.MaxTimestamp = now
			binary.BigEndian.PutUint16(b[offAttributes:], uint16(h.Attributes))
			binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(now))
			binary.BigEndian.PutUint32(b[offCRC:], batchCRC(b))
		case h.LogAppendTime():
			// A producer cannot choose LogAppendTime; the topic decides.
			h.Attributes &^= attrTimestampType
			binary.BigEndian.PutUint16(b[offAttributes:], uint16(h.Attributes))
			binary.BigEndian.PutUint32(b[offCRC:], batchCRC(b))
		}
		next = h.LastOffset() + 1
	}
	return next
}

// saveEpochFor makes the leader-epoch cache durable with leaderEpoch
// starting at end, if it is new, before the batches it vouches for, so
// recovery can check every batch's epoch against it; a file a truncation
// or retention failed to rewrite may hold epochs past the end that these
// batches would contradict, so it is rewritten first too. Called with
// appendMu held.
func (l *Log) saveEpochFor(leaderEpoch int32, end int64) error {
	newEpoch := leaderEpoch >= 0 && (len(l.epochs) == 0 || leaderEpoch > l.epochs[len(l.epochs)-1].Epoch)
	if !newEpoch && !l.epochsStale {
		return nil
	}
	epochs := l.epochs[:len(l.epochs):len(l.epochs)]
	if newEpoch {
		epochs = append(epochs, EpochEntry{Epoch: leaderEpoch, StartOffset: end})
	}
	if err := writeFileAtomic(l.dir, leaderEpochFile, encodeEpochs(epochs)); err != nil {
		return err
	}
	l.mu.Lock()
	l.epochs = epochs
	l.mu.Unlock()
	l.epochsStale = false
	return nil
}

// writeAndPublish writes the stamped batches past the active segment's
// published end, stages their index entries, and only then publishes the
// new end to readers under mu. Called with appendMu held.
func (l *Log) writeAndPublish(active *segment, batches []byte, hs []batchAt, now int64) error {
	cfg := l.cfg
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
		return err
	}
	pendOff, err := stageIndex(active.offIdx, active.pendOff, ob, active.fileOffEntries(), offsetEntrySize)
	var pendTime []byte
	if err == nil {
		pendTime, err = stageIndex(active.tsIdx, active.pendTime, tb, active.fileTimeEntries(), timeEntrySize)
	}
	if err != nil {
		l.undoAppend(active)
		return err
	}
	st.dirty = true // indexes, and under other policies the log, await Flush
	memOff := active.memOff
	if len(ob) > 0 {
		memOff = withMemEntries(memOff, ob)
	}
	l.mu.Lock()
	active.st = st
	active.pendOff, active.pendTime = pendOff, pendTime
	active.memOff = memOff
	l.mu.Unlock()
	return nil
}

// armFlushTimer starts the FlushInterval timer if it is not running.
// Called with appendMu held.
func (l *Log) armFlushTimer() {
	if l.cfg.Flush != FlushInterval || l.flushTimer != nil {
		return
	}
	l.bg.Add(1)
	l.flushTimer = time.AfterFunc(l.cfg.FlushEvery, func() {
		defer l.bg.Done()
		l.appendMu.Lock()
		l.flushTimer = nil
		l.appendMu.Unlock()
		l.Flush()
	})
}

// validatedBatches validates every batch in b (recordbatch.Scan) and appends
// where each starts to hs, returning them with their record count.
func validatedBatches(b []byte, hs []batchAt) ([]batchAt, int64, error) {
	records := int64(0)
	if _, err := recordbatch.Scan(b, func(pos int, h BatchHeader) {
		hs = append(hs, batchAt{pos, h})
		records += int64(h.NumRecords)
	}); err != nil {
		return nil, 0, err
	}
	return hs, records, nil
}

// writeAppend writes the batches past the active segment's published end,
// undoing a partial write on error.
func (l *Log) writeAppend(s *segment, batches []byte, sync bool) error {
	f, err := s.log.acquire()
	if err != nil {
		return err
	}
	defer s.log.release()
	if _, err := f.WriteAt(batches, s.st.size); err != nil {
		l.undoAppend(s)
		return fmt.Errorf("write %s: %w", s.log.path, err)
	}
	if sync {
		if err := dataSync(f); err != nil {
			l.undoAppend(s)
			return fmt.Errorf("fsync %s: %w", s.log.path, err)
		}
	}
	return nil
}

// undoAppend cuts what a failed append wrote past the published end. Best
// effort: recovery would cut an unvouched tail anyway.
func (l *Log) undoAppend(s *segment) {
	if f, err := s.log.acquire(); err == nil {
		f.Truncate(s.st.size)
		s.log.release()
	}
}

// writePending writes a segment's pending index entries to its files; called
// with appendMu held.
func (l *Log) writePending(s *segment) error {
	if len(s.pendOff) > 0 {
		if err := writeAtHandle(s.offIdx, s.pendOff, int64(s.fileOffEntries())*offsetEntrySize); err != nil {
			return err
		}
	}
	if len(s.pendTime) > 0 {
		if err := writeAtHandle(s.tsIdx, s.pendTime, int64(s.fileTimeEntries())*timeEntrySize); err != nil {
			return err
		}
	}
	l.mu.Lock()
	s.pendOff, s.pendTime = s.pendOff[:0], s.pendTime[:0]
	l.mu.Unlock()
	return nil
}

func writeAtHandle(h *fileHandle, b []byte, at int64) error {
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release()
	if _, err := f.WriteAt(b, at); err != nil {
		return fmt.Errorf("write %s: %w", h.path, err)
	}
	return nil
}

// roll starts a new active segment at offset base and flushes the old ones
// in the background, as Kafka does. Called with appendMu held.
func (l *Log) roll(base int64) (*segment, error) {
	s, err := createSegment(l.dir, base, l.files)
	if err != nil {
		return nil, err
	}
	segs := append(l.segs[:len(l.segs):len(l.segs)], s)
	sealed := l.segs[len(l.segs)-1]
	l.mu.Lock()
	l.segs = segs
	sealed.memOff = nil
	l.mu.Unlock()
	l.bg.Add(1)
	go func() {
		defer l.bg.Done()
		l.Flush()
	}()
	return s, nil
}

// unmarkClean rewrites a "closed cleanly" recovery point before the first
// change after Open, so a crash from now on makes the next Open walk the tail.
func (l *Log) unmarkClean() error {
	if !l.cleanMarked {
		return nil
	}
	if err := l.writeRecoveryPoint(recoveryPoint{Offset: l.recoveryPoint, CleanBase: -1}); err != nil {
		return err
	}
	l.cleanMarked = false
	return nil
}

func (l *Log) stopFlushTimer() {
	if l.flushTimer != nil && l.flushTimer.Stop() {
		l.bg.Done()
	}
	l.flushTimer = nil
}

// Flush fsyncs every segment written since the last flush, then advances
// the recovery point to the log end. Appends continue meanwhile, and reads
// are never blocked by it.
func (l *Log) Flush() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.appendMu.Lock()
	if l.closed {
		l.appendMu.Unlock()
		return ErrClosed
	}
	end := l.segs[len(l.segs)-1].st.next
	for _, s := range l.segs {
		if err := l.writePending(s); err != nil {
			l.appendMu.Unlock()
			return fmt.Errorf("flush %s: %w", l.dir, err)
		}
	}
	var dirty []*segment
	l.mu.Lock()
	for _, s := range l.segs {
		if s.st.dirty {
			dirty = append(dirty, s)
			s.st.dirty = false
		}
	}
	l.mu.Unlock()
	l.appendMu.Unlock()

	var err error
	for _, s := range dirty {
		if err = s.sync(); err != nil {
			break
		}
	}
	if err == nil {
		err = atomicfile.SyncDir(l.dir)
	}
	l.appendMu.Lock()
	if err != nil {
		l.mu.Lock()
		for _, s := range dirty {
			s.st.dirty = true
		}
		l.mu.Unlock()
		l.appendMu.Unlock()
		return fmt.Errorf("flush %s: %w", l.dir, err)
	}
	if end <= l.recoveryPoint || l.closed {
		l.appendMu.Unlock()
		return nil
	}
	l.appendMu.Unlock()
	// The checkpoint's two fsyncs happen outside appendMu, so appends do not
	// queue behind them (a roll's background flush would otherwise stall the
	// appends to the new segment). No other writer of the file can run
	// meanwhile: truncation and Close hold flushMu, and Append's unmarkClean
	// writes it only while the log is still marked clean, which it stopped
	// being when the first append carried end past the recovery point.
	if err := l.writeRecoveryPoint(recoveryPoint{Offset: end, CleanBase: -1}); err != nil {
		return fmt.Errorf("flush %s: %w", l.dir, err)
	}
	l.appendMu.Lock()
	l.recoveryPoint, l.cleanMarked = end, false
	l.appendMu.Unlock()
	return nil
}

// syncDirty fsyncs every dirty segment and tells whether there was any;
// called with appendMu held.
func (l *Log) syncDirty() (synced bool, err error) {
	for _, s := range l.segs {
		if !s.st.dirty {
			continue
		}
		synced = true
		if err := l.writePending(s); err != nil {
			return synced, err
		}
		if err := s.sync(); err != nil {
			return synced, err
		}
		l.mu.Lock()
		s.st.dirty = false
		l.mu.Unlock()
	}
	return synced, nil
}
