package partition

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spool-log/spool/internal/atomicfile"
)

// ErrStaleLeaderEpoch refuses an append whose leader epoch is older than one
// the log has already written: epochs never go backwards within a log.
var ErrStaleLeaderEpoch = errors.New("leader epoch older than the log's latest")

// Log is one partition's append-only log. All methods are safe for
// concurrent use.
type Log struct {
	dir   string
	files *FileCache

	// flushMu serializes flushes and truncations, so a recovery point is
	// never written for bytes a truncation has since replaced.
	flushMu sync.Mutex
	// appendMu serializes every writer: append, roll, truncate, retention.
	// Writers may read segs and seg.st under it without mu.
	appendMu sync.Mutex
	// mu guards what readers see: segs, every seg.st, epochs, cfg, closed.
	mu     sync.RWMutex
	cfg    Config
	segs   []*segment // ascending by base; the last is active; replaced, never edited
	epochs []EpochEntry
	closed bool
	// reads counts the Reads (and OffsetForTime calls) walking files of the
	// segment list they saw under mu. A truncation swaps in a new group as
	// it publishes the cut, and waits for the old one before it cuts files.
	reads *sync.WaitGroup

	// Guarded by appendMu.
	recoveryPoint int64
	cleanMarked   bool        // the checkpoint on disk still says "closed cleanly"
	epochsStale   bool        // a rewrite of the leader-epoch file failed: it may not match epochs
	flushTimer    *time.Timer // armed while FlushInterval has unflushed data
	entryBuf      []byte
	timeBuf       []byte

	bg sync.WaitGroup // flushes started by rolls and the flush timer

	// Log cleaner state (compact.go). cleanMu serializes cleanings;
	// cleanedTo and deleteHorizon are written under appendMu and mu.
	cleanMu       sync.Mutex
	cleanedTo     int64  // first dirty offset: below it the cleaner has run and batches may have gaps
	deleteHorizon int64  // earliest delete horizon of a batch still holding tombstones below cleanedTo, -1 if none
	segGen        uint64 // bumped when retention, truncation or a cleaning changes closed segments; guarded by appendMu

	// logStart is where DeleteRecords moved the log start (start_offset.go),
	// 0 if never; written under appendMu and mu.
	logStart int64
	// logStartStale: the checkpoint on disk is above logStart (a lowering
	// failed to save); guarded by appendMu.
	logStartStale bool
}

type batchAt struct {
	pos int
	h   BatchHeader
}

// AppendInfo describes a successful Append.
type AppendInfo struct {
	BaseOffset    int64 // offset given to the first record
	LastOffset    int64 // offset given to the last record
	LogAppendTime int64 // broker time stamped on the batches in ms, -1 under CreateTime
	RecordCount   int
	Bytes         int
}

// Open opens the log in dir, creating the directory if missing, and recovers
// it: segments after the recovery point are walked batch by batch (length,
// CRC, contiguous offsets, leader epoch) and cut at the first bad byte, later
// segments moved out of the log, and their indexes rebuilt; earlier segments'
// indexes are sanity-checked and rebuilt if they fail. What is cut or moved
// goes to quarantine first (quarantine.go) and is reported to
// Config.OnCorruption; if it cannot be kept, Open fails with nothing cut.
func Open(dir string, cfg Config) (*Log, error) {
	cfg = cfg.normalized()
	files := cfg.Files
	if files == nil {
		files = NewFileCache(privateFileCacheSize)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	l := &Log{dir: dir, files: files, cfg: cfg, reads: new(sync.WaitGroup)}
	err := l.load()
	if err == nil {
		err = l.loadLogStart()
	}
	if err != nil {
		for _, s := range l.segs {
			s.close()
		}
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	return l, nil
}

func (l *Log) load() error {
	// A cleaning that crashed mid-swap is finished or undone before the
	// segments are listed, so they are either all old or all new.
	if err := finishSwaps(l.dir); err != nil {
		return err
	}
	l.cleanedTo, l.deleteHorizon = readCleanerCheckpoint(l.dir)
	bases, err := l.listSegments()
	if err != nil {
		return err
	}
	if len(bases) == 0 {
		return l.createFirstSegment()
	}
	rp := readRecoveryPoint(l.dir)
	// cleanMarked says what the file beside the segments says, whatever
	// vouches for them at this open.
	diskClean := rp.CleanBase >= 0
	if p := l.cfg.ShutdownPoint; p.vouches(l.dir) {
		rp = recoveryPoint{Offset: p.Offset, CleanBase: p.CleanBase, CleanSize: p.CleanSize}
	}
	l.cfg.ShutdownPoint = nil // for this open only
	ec := l.loadEpochCheck()
	if ec.learn {
		rp = recoveryPoint{CleanBase: -1} // walk everything
	}
	walked, err := l.loadSegments(bases, rp, ec)
	if err != nil {
		return err
	}
	return l.finishLoad(rp, diskClean, ec, walked)
}

// listSegments returns the base offsets of the directory's segments,
// ascending, and removes what a crash left behind: state files whose
// replacement never finished, indexes of deleted segments.
func (l *Log) listSegments() ([]int64, error) {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, err
	}
	var bases []int64
	logs := map[int64]bool{}
	for _, e := range entries {
		if base, ok := parseSegmentName(e.Name()); ok && e.Type().IsRegular() {
			bases = append(bases, base)
			logs[base] = true
		}
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, tempSuffix):
			// A state file whose replacement never finished; the old one stands.
			os.Remove(filepath.Join(l.dir, name))
		case strings.HasSuffix(name, offsetSuffix) || strings.HasSuffix(name, timeIndexSuffix):
			stem := strings.TrimSuffix(strings.TrimSuffix(name, offsetSuffix), timeIndexSuffix)
			if base, ok := parseSegmentName(stem + logSuffix); ok && !logs[base] {
				os.Remove(filepath.Join(l.dir, name)) // index of a deleted segment
			}
		}
	}
	slices.Sort(bases)
	return bases, nil
}

// createFirstSegment starts a new, empty log.
func (l *Log) createFirstSegment() error {
	s, err := createSegment(l.dir, 0, l.files)
	if err != nil {
		return err
	}
	l.segs = []*segment{s}
	// No fsyncs for a new log, so creating thousands stays cheap: if a
	// crash loses these files, the next Open finds either no segment
	// (a new log again) or no epoch file, and then learns the epochs by
	// walking every batch. A missing recovery point means the same walk.
	path := filepath.Join(l.dir, leaderEpochFile)
	if err := os.WriteFile(path, encodeEpochs(nil), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// epochCheck is how recovery checks each batch's leader epoch: against the
// cache on disk, or, when that is lost (learn), by learning the cache from
// the batches as it walks them all.
type epochCheck struct {
	learn  bool
	epochs *[]EpochEntry // the cache, read or being learnt
	ok     func(offset int64, epoch int32) bool
}

func (l *Log) loadEpochCheck() epochCheck {
	epochs, epochErr := readEpochs(l.dir)
	_, statErr := os.Stat(filepath.Join(l.dir, leaderEpochFile))
	ec := epochCheck{learn: epochErr != nil || statErr != nil, epochs: &epochs}
	if !ec.learn {
		ec.ok = func(off int64, epoch int32) bool { return epoch == epochAt(epochs, off) }
		return ec
	}
	epochs = nil
	ec.ok = func(off int64, epoch int32) bool {
		last := int32(-1)
		if len(epochs) > 0 {
			last = epochs[len(epochs)-1].Epoch
		}
		if epoch < last {
			return false
		}
		if epoch > last {
			epochs = append(epochs, EpochEntry{Epoch: epoch, StartOffset: off})
		}
		return true
	}
	return ec
}

// loadSegments loads each segment the recovery point vouches for cheaply
// (segment.load) and walks the others (segment.recover), cutting at the
// first bad byte and moving every segment after a cut one to quarantine.
// It reports whether it walked any.
func (l *Log) loadSegments(bases []int64, rp recoveryPoint, ec epochCheck) (walked bool, err error) {
	for i, base := range bases {
		s := newSegment(l.dir, base, l.files)
		last := i == len(bases)-1
		nextBase, maxRel := int64(math.MaxInt64), int64(math.MaxUint32)+1
		if !last {
			nextBase = bases[i+1]
			maxRel = min(maxRel, nextBase-base)
		}
		gaps, damaged := l.gapsAllowed(base), false
		if !ec.learn && trustedLoad(s, rp, last, nextBase, maxRel, gaps) {
			l.segs = append(l.segs, s)
			continue
		}
		walked = true
		if damaged, err = s.recover(l.cfg.IndexIntervalBytes, ec.ok, gaps, l.keepCut(s)); err != nil {
			return walked, err
		}
		l.segs = append(l.segs, s)
		// A segment with cleaner gaps cannot show by its end that it was
		// cut, so its walk says so.
		if !last && (!endsAt(s.st.next, nextBase, gaps) || (gaps && damaged)) {
			// The walk stopped short of where the next segment starts: what
			// follows cannot stay in a log whose offsets are contiguous.
			// Kafka deletes it; it goes to quarantine instead.
			for _, b := range bases[i+1:] {
				if err := l.dropSegment(newSegment(l.dir, b, l.files), s); err != nil {
					return walked, err
				}
			}
			break
		}
	}
	return walked, nil
}

// trustedLoad loads s cheaply if the recovery point vouches for it (it
// ends at or below the recovery point, or is the last segment of a log
// closed cleanly at its size) and what it finds agrees; otherwise s must
// be walked.
func trustedLoad(s *segment, rp recoveryPoint, last bool, nextBase, maxRel int64, gaps bool) bool {
	if !(!last && nextBase <= rp.Offset) && !(last && rp.CleanBase == s.base) {
		return false
	}
	if err := s.load(maxRel, gaps); err != nil {
		return false
	}
	if !last {
		return endsAt(s.st.next, nextBase, gaps)
	}
	return s.st.size == rp.CleanSize && s.st.next == rp.Offset
}

// finishLoad sets what the loaded segments imply: the active segment's
// clock, the epoch cache trimmed to the log, the recovery point, made
// durable with what a walk rebuilt.
func (l *Log) finishLoad(rp recoveryPoint, diskClean bool, ec epochCheck, walked bool) error {
	for _, s := range l.segs[:len(l.segs)-1] {
		s.memOff = nil // walked, but not active
	}
	l.cleanMarked = diskClean
	// segment.ms counts from the first append a segment got; across a
	// restart it counts from Open, as producer timestamps cannot be trusted
	// to say when a segment started.
	l.segs[len(l.segs)-1].st.rollStart = l.cfg.Clock().UnixMilli()

	end := l.segs[len(l.segs)-1].st.next
	start := l.segs[0].base
	epochs := *ec.epochs
	kept := truncateEpochs(epochs, start, end)
	if ec.learn || !slices.Equal(kept, epochs) {
		if err := writeFileAtomic(l.dir, leaderEpochFile, encodeEpochs(kept)); err != nil {
			return err
		}
	}
	l.epochs = kept
	l.recoveryPoint = min(rp.Offset, end)
	if !walked {
		return nil
	}
	for _, s := range l.segs {
		if s.st.dirty {
			if err := s.sync(); err != nil {
				return err
			}
			s.st.dirty = false
		}
	}
	l.recoveryPoint = end
	l.cleanMarked = false
	return l.writeRecoveryPoint(recoveryPoint{Offset: end, CleanBase: -1})
}

// keepCut is segment.recover's keep for Open: the bytes recovery cuts from
// s are copied to quarantine first, and reported.
func (l *Log) keepCut(s *segment) func(f *os.File, pos, size, next int64, reason string) error {
	return func(f *os.File, pos, size, next int64, reason string) error {
		q, err := l.keepTail(s, f, pos, size)
		if err != nil {
			return err
		}
		l.report(Corruption{
			Segment: s.log.path, Position: pos, Offset: next, EndOffset: claimedEnd(f, pos, size),
			Bytes: size - pos, Reason: reason, Quarantine: q,
		})
		return nil
	}
}

// dropSegment moves segment d, which follows the cut segment s, out of the
// log into quarantine, and reports it.
func (l *Log) dropSegment(d, s *segment) error {
	c := Corruption{Segment: d.log.path, Offset: d.base, EndOffset: -1,
		Reason: fmt.Sprintf("follows segment %s, which now ends before offset %d: offsets must stay contiguous", filepath.Base(s.log.path), s.st.next)}
	if f, err := os.Open(d.log.path); err == nil {
		if fi, err := f.Stat(); err == nil {
			c.Bytes = fi.Size()
			c.EndOffset = claimedEnd(f, 0, fi.Size())
		}
		f.Close()
	}
	q, err := l.quarantineSegment(d)
	if err != nil {
		return err
	}
	c.Quarantine = q
	l.report(c)
	return nil
}

// epochAt is the leader epoch the cache says wrote offset off, -1 if none.
func epochAt(entries []EpochEntry, off int64) int32 {
	i := sort.Search(len(entries), func(i int) bool { return entries[i].StartOffset > off })
	if i == 0 {
		return -1
	}
	return entries[i-1].Epoch
}

// truncateEpochs drops entries that start at or past end and moves the entry
// covering start up to start, dropping those wholly before it.
func truncateEpochs(entries []EpochEntry, start, end int64) []EpochEntry {
	out := make([]EpochEntry, 0, len(entries))
	for i, e := range entries {
		if e.StartOffset >= end {
			break
		}
		if i+1 < len(entries) && entries[i+1].StartOffset <= start {
			continue
		}
		if e.StartOffset < start {
			e.StartOffset = start
		}
		out = append(out, e)
	}
	return out
}

func (l *Log) writeRecoveryPoint(rp recoveryPoint) error {
	return writeFileAtomic(l.dir, recoveryPointFile, rp.encode())
}

// Dir is the log's directory.
func (l *Log) Dir() string { return l.dir }

// StartOffset is the first offset still in the log.
func (l *Log) StartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.startLocked()
}

// EndOffset is the log end offset: the offset the next record will get.
func (l *Log) EndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.segs[len(l.segs)-1].st.next
}

// Size is the log's total size in bytes.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.segs {
		n += s.st.size
	}
	return n
}

// SegmentCount is how many segments the log has, the active one included.
func (l *Log) SegmentCount() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.segs)
}

// SetConfig changes the topic's settings; they apply from the next append or
// retention pass. The FileCache cannot be changed and is ignored.
func (l *Log) SetConfig(cfg Config) {
	cfg = cfg.normalized()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	cfg.Files = l.cfg.Files
	// Settings from a topic's config know nothing of where the node keeps
	// quarantine or how it logs; those stay as the log was opened with.
	if cfg.QuarantineDir == "" {
		cfg.QuarantineDir = l.cfg.QuarantineDir
	}
	if cfg.OnCorruption == nil {
		cfg.OnCorruption = l.cfg.OnCorruption
	}
	l.cfg = cfg
}

// Config returns the log's current settings, defaults filled in.
func (l *Log) Config() Config {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cfg
}

// LeaderEpochs returns a copy of the leader-epoch cache, oldest first.
func (l *Log) LeaderEpochs() []EpochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return slices.Clone(l.epochs)
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch: the offset after the last
// record written in epoch, which is the start of the next higher epoch, or
// the log end offset for the latest epoch. ok is false for an epoch the cache
// does not cover (before its first entry or after its last).
func (l *Log) EndOffsetForEpoch(epoch int32) (endOffset int64, ok bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.epochs) == 0 || epoch < l.epochs[0].Epoch {
		return -1, false
	}
	latest := l.epochs[len(l.epochs)-1]
	if epoch > latest.Epoch {
		return -1, false
	}
	if epoch == latest.Epoch {
		return l.segs[len(l.segs)-1].st.next, true
	}
	i := sort.Search(len(l.epochs), func(i int) bool { return l.epochs[i].Epoch > epoch })
	return l.epochs[i].StartOffset, true
}

// Close flushes everything, records that the log closed cleanly (so the next
// Open need not walk it), and releases its files. Slices already handed out
// stay readable until released. A log unchanged since Open found it closed
// cleanly is closed without touching the disk: its checkpoint already says
// so, and a node with thousands of idle partitions stops in moments.
func (l *Log) Close() error {
	_, err := l.close(true)
	return err
}

// close is Close, which writes the clean recovery point beside the
// segments (writeRP), and CloseForShutdown, which returns it.
func (l *Log) close(writeRP bool) (ShutdownPoint, error) {
	l.flushMu.Lock()
	l.appendMu.Lock()
	if l.closed {
		l.appendMu.Unlock()
		l.flushMu.Unlock()
		return ShutdownPoint{}, ErrClosed
	}
	l.stopFlushTimer()
	last := l.segs[len(l.segs)-1]
	end := last.st.next
	unchanged := l.unchangedSinceCleanOpen()
	// Without writeRP the directory needs its fsync only if the log
	// changed it since it was last made durable: a segment synced now (a
	// rolled one's entry may not be durable yet), a flush short of the
	// end, closed segments deleted or replaced. A log created in this run
	// and never written may lose its files to a crash: it comes back
	// empty, as it was.
	synced, err := false, error(nil)
	if !unchanged {
		synced, err = l.syncDirty()
	}
	if err == nil && !unchanged && (writeRP || synced || l.recoveryPoint < end || l.segGen != 0) {
		err = atomicfile.SyncDir(l.dir)
	}
	if err == nil && !unchanged && writeRP {
		err = l.writeRecoveryPoint(recoveryPoint{Offset: end, CleanBase: last.base, CleanSize: last.st.size})
	}
	point := ShutdownPoint{Offset: end, CleanBase: last.base, CleanSize: last.st.size}
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	// Nothing new reaches the segments once closed is set; closing their
	// files (the last close of a deleted one frees its blocks) is I/O, so
	// it runs outside mu.
	for _, s := range l.segs {
		s.close()
	}
	l.appendMu.Unlock()
	l.flushMu.Unlock()
	l.bg.Wait()
	if err != nil {
		return ShutdownPoint{}, fmt.Errorf("close log %s: %w", l.dir, err)
	}
	return point, nil
}

// unchangedSinceCleanOpen reports that the on-disk clean checkpoint still
// describes the log: nothing appended or truncated (either would have
// unmarked it), no closed segment deleted or replaced (segGen), nothing
// awaiting fsync. Called with appendMu held.
func (l *Log) unchangedSinceCleanOpen() bool {
	if !l.cleanMarked || l.segGen != 0 {
		return false
	}
	for _, s := range l.segs {
		if s.st.dirty || len(s.pendOff) > 0 || len(s.pendTime) > 0 {
			return false
		}
	}
	return true
}

// Delete closes the log and removes its directory.
func (l *Log) Delete() error {
	l.Close() // the data is being thrown away: a failed final flush is moot
	// A cleaning in progress stops at its next check of closed; wait for it
	// so that it creates no file in the directory being removed.
	l.cleanMu.Lock()
	l.cleanMu.Unlock()
	if err := os.RemoveAll(l.dir); err != nil {
		return fmt.Errorf("delete log %s: %w", l.dir, err)
	}
	return nil
}

// ClosedEnd is where the active segment starts: everything below it is in
// closed segments, the only ones the cleaner rewrites.
func (l *Log) ClosedEnd() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.segs[len(l.segs)-1].base
}
