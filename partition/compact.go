package partition

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spool-log/spool/internal/atomicfile"
	"github.com/spool-log/spool/internal/recordbatch"
)

// Log compaction, after Apache Kafka's LogCleaner.
//
// A cleaning reads the dirty part of the closed log (from the cleaner
// checkpoint up to the last closed segment that is on disk and below upTo)
// into a map of key -> newest offset, then rewrites every closed segment up
// to there, oldest first, keeping a record only if no newer record of its key
// exists. The active segment is never touched. Offsets never change: a batch
// that loses records keeps its base offset and lastOffsetDelta, so readers
// see offset gaps, never moved records, and the log start offset stays.
// Tombstones (nil values) are kept until their batch's delete horizon, set
// to now+DeleteRetention the first time a cleaning sees them (KIP-534).
// Records of aborted transactions are removed, and transaction markers too
// once their transaction has no record left, past a horizon stamped the
// same way (compact_txn.go).
//
// Consecutive segments are rewritten as one group into one new segment
// named by the group's first base offset, and swapped in crash-safely:
//
//  1. write B.log.cleaned, B.index.cleaned, B.timeindex.cleaned; fsync them
//  2. rename the indexes to B.index.swap, B.timeindex.swap
//  3. rename B.log.cleaned to B.log.E.swap (E: the group's end offset) and
//     fsync the directory: the commit point
//  4. delete the group's other segments and rename the index swaps over B's
//  5. advance the cleaner checkpoint to E (gaps are allowed below it, and
//     the next cleaning maps keys from there), then rename the log swap
//     over B.log and fsync the directory
//
// Open finishes a swap whose log swap file exists (steps 4 and 5 again; not
// knowing the swapped data's delete horizons, it marks one due so that the
// next pass recomputes them) and otherwise deletes every .cleaned and index
// .swap file, so a crash leaves either the old segments or the new one,
// never a mix, and never a segment with gaps above the checkpoint nor a
// checkpoint past data that was not cleaned. Readers holding a Slice of an
// old segment keep its descriptor until they release it.

const (
	cleanedSuffix         = ".cleaned"
	swapSuffix            = ".swap"
	cleanerCheckpointFile = "cleaner-offset-checkpoint"
)

// testHookSwapStep, if set, is called after every step of a swap that
// changes the directory, so tests can capture each state a crash could leave.
var testHookSwapStep func(step string)

func swapStep(step string) {
	if testHookSwapStep != nil {
		testHookSwapStep(step)
	}
}

// ErrCleanAborted is returned by Clean when retention, a truncation or Close
// changed the log under it; nothing was swapped for the groups not yet done,
// and a later cleaning starts over.
var ErrCleanAborted = errors.New("log changed during cleaning")

// CleanStats says what a cleaning did.
type CleanStats struct {
	DirtyFrom, DirtyTo int64 // offsets whose keys the map covered
	Segments           int   // closed segments read
	SegmentsWritten    int   // new segments swapped in
	BytesBefore        int64 // size of the segments read
	BytesAfter         int64 // their size after cleaning
	Records            int64 // records read
	RecordsKept        int64
	TombstonesRemoved  int64 // tombstones past their delete horizon
	AbortedRemoved     int64 // records of aborted transactions
	MarkersRemoved     int64 // transaction markers with no record left, past their delete horizon
	KeylessRemoved     int64 // records without a key, which a compacted log cannot hold
	MapKeys            int   // distinct keys in the dirty part
}

// gapsAllowed reports whether the segment at base may hold cleaner gaps.
// Called with appendMu or mu held, or during Open.
func (l *Log) gapsAllowed(base int64) bool {
	return l.cfg.Compact || base < l.cleanedTo
}

// endsAt reports whether a segment whose batches end before next fits
// before a segment starting at nextBase.
func endsAt(next, nextBase int64, gaps bool) bool {
	return next == nextBase || (gaps && next < nextBase)
}

// DirtyRatio is the share of the closed segments' bytes that no cleaning
// has seen yet, and those bytes (Kafka's cleanable ratio).
func (l *Log) DirtyRatio() (ratio float64, dirtyBytes int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.dirtyRatioLocked()
}

func (l *Log) dirtyRatioLocked() (float64, int64) {
	var total, dirty int64
	for _, s := range l.segs[:len(l.segs)-1] {
		total += s.st.size
		if s.base >= l.cleanedTo {
			dirty += s.st.size
		}
	}
	if total == 0 {
		return 0, 0
	}
	return float64(dirty) / float64(total), dirty
}

// NeedsCleaning reports whether Clean has work: the log is compacted and
// either its dirty ratio reached MinCleanableRatio or a tombstone's delete
// horizon has passed.
func (l *Log) NeedsCleaning() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if !l.cfg.Compact || l.closed {
		return false
	}
	ratio, dirty := l.dirtyRatioLocked()
	if dirty > 0 && ratio >= l.cfg.MinCleanableRatio {
		return true
	}
	return l.deleteHorizon >= 0 && l.cfg.Clock().UnixMilli() >= l.deleteHorizon
}

// cleanPlan is what Clean works on, taken under appendMu.
type cleanPlan struct {
	cfg        Config
	segs       []*segment // closed segments that may be cleaned, oldest first
	sizes      []int64    // their sizes then
	ends       []int64    // offset where each one's successor starts
	firstDirty int64
	gen        uint64
}

// keyAt is a record's key and offset.
type keyAt struct {
	key    string
	offset int64
}

// Clean compacts the closed segments that are on disk and end at or below
// upTo (the high watermark). mapBytes bounds the key map (about the key
// bytes plus 64 per distinct key); a dirty part with more keys is cleaned
// up to the segment where the map filled, and the next Clean goes on from
// there. It is safe to run beside appends, reads, flushes and retention;
// one Clean at a time runs per Log.
func (l *Log) Clean(upTo int64, mapBytes int) (CleanStats, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	var stats CleanStats
	plan, err := l.planClean(upTo)
	if err != nil || len(plan.segs) == 0 {
		return stats, err
	}
	offsets := map[string]int64{}
	// txnPending holds, per producer, the keys of its transactional
	// records since its last marker.
	txnPending := map[int64][]keyAt{}
	txns := newTxnScan()
	stats.DirtyFrom, stats.DirtyTo = plan.firstDirty, plan.firstDirty
	used, n := 0, 0
	var recs []recordbatch.Record
	for i, s := range plan.segs {
		if plan.ends[i] <= plan.firstDirty {
			// Already cleaned: only its transactions are needed.
			err := l.eachBatch(s, plan.sizes[i], func(batch []byte, h BatchHeader) error {
				return txns.noteBatch(batch, h, plan.cfg.Codecs)
			})
			if err != nil {
				return stats, fmt.Errorf("clean %s: scan segment %d: %w", l.dir, s.base, err)
			}
			n = i + 1
			continue
		}
		if used >= mapBytes && stats.DirtyTo > plan.firstDirty {
			break // the map is full: clean up to here, the rest next time
		}
		err := l.eachBatch(s, plan.sizes[i], func(batch []byte, h BatchHeader) error {
			if h.Control() && !h.Transactional() {
				return nil
			}
			var err error
			if recs, err = recordbatch.Records(recs[:0], batch, h, plan.cfg.Codecs, maxDecompressedBytes); err != nil {
				return err
			}
			if h.Control() && txns.note(h, recs) {
				used += txnSpanBytes
			} else if !h.Control() && h.Transactional() {
				txns.note(h, nil)
			}
			switch {
			case h.Control():
				// A transaction marker: a commit lets its producer's
				// records shadow older ones of their keys.
				keys := txnPending[h.ProducerID]
				delete(txnPending, h.ProducerID)
				if len(recs) == 0 || len(recs[0].Key) < 4 || recs[0].Key[3] != 1 {
					return nil // an abort: its records shadow nothing
				}
				for _, k := range keys {
					old, ok := offsets[k.key]
					if !ok {
						used += len(k.key) + 64
					}
					if !ok || k.offset > old {
						offsets[k.key] = k.offset
					}
				}
				return nil
			case h.Transactional():
				// Until its marker, a transactional record may belong to
				// a transaction still open or to be aborted: it shadows
				// nothing. (Aborted ones are removed by the filter,
				// which knows them from txns.)
				for _, r := range recs {
					if r.Key != nil {
						txnPending[h.ProducerID] = append(txnPending[h.ProducerID], keyAt{string(r.Key), h.BaseOffset + r.OffsetDelta})
						used += len(r.Key) + 24
					}
				}
				return nil
			}
			for _, r := range recs {
				if r.Key == nil {
					continue
				}
				if _, ok := offsets[string(r.Key)]; !ok {
					used += len(r.Key) + 64
				}
				offsets[string(r.Key)] = h.BaseOffset + r.OffsetDelta
			}
			return nil
		})
		if err != nil {
			return stats, fmt.Errorf("clean %s: map segment %d: %w", l.dir, s.base, err)
		}
		n = i + 1
		stats.DirtyTo = plan.ends[i]
	}
	stats.MapKeys = len(offsets)
	if stats.DirtyTo == plan.firstDirty && !l.horizonDue(plan.cfg) {
		return stats, nil // nothing dirty and no tombstone due
	}
	cleanEnd := plan.ends[n-1]

	c := &cleaner{
		l:       l,
		cfg:     plan.cfg,
		offsets: offsets,
		now:     plan.cfg.Clock().UnixMilli(),
		stats:   &stats,
		horizon: -1,
		txns:    txns,
		txnKept: map[int64]bool{},
	}
	c.newHorizon = c.now + plan.cfg.DeleteRetention.Milliseconds()
	gen := plan.gen
	for start := 0; start < n; {
		end := groupEnd(plan, start, n)
		if gen, err = c.cleanGroup(plan, start, end, gen); err != nil {
			return stats, err
		}
		start = end
	}
	if err := l.finishClean(cleanEnd, c.horizon, gen); err != nil {
		return stats, err
	}
	return stats, nil
}

// planClean picks the closed segments that are durable and below upTo.
func (l *Log) planClean(upTo int64) (cleanPlan, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return cleanPlan{}, ErrClosed
	}
	p := cleanPlan{cfg: l.cfg, gen: l.segGen, firstDirty: max(l.cleanedTo, l.segs[0].base)}
	limit := min(l.recoveryPoint, upTo)
	for i, s := range l.segs[:len(l.segs)-1] {
		end := l.segs[i+1].base
		if end > limit {
			break
		}
		p.segs = append(p.segs, s)
		p.sizes = append(p.sizes, s.st.size)
		p.ends = append(p.ends, end)
	}
	return p, nil
}

func (l *Log) horizonDue(cfg Config) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.deleteHorizon >= 0 && cfg.Clock().UnixMilli() >= l.deleteHorizon
}

// groupEnd is one past the last segment of the group starting at start:
// consecutive segments whose sizes add up to at most SegmentBytes and whose
// offsets fit one segment's 32-bit relative offsets.
func groupEnd(p cleanPlan, start, n int) int {
	size := p.sizes[start]
	end := start + 1
	for end < n && size+p.sizes[end] <= p.cfg.SegmentBytes && p.ends[end]-p.segs[start].base <= math.MaxUint32 {
		size += p.sizes[end]
		end++
	}
	return end
}

// eachBatch calls fn with every batch of the first size bytes of segment s,
// checking each as recovery does. The batch slice is reused. The file stays
// pinned meanwhile; a segment that retention or Close dropped aborts.
func (l *Log) eachBatch(s *segment, size int64, fn func(batch []byte, h BatchHeader) error) error {
	f, err := s.log.acquire()
	if errors.Is(err, errFileGone) {
		return ErrCleanAborted
	}
	if err != nil {
		return err
	}
	defer s.log.release()
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 64<<10)
	buf := make([]byte, 0, 64<<10)
	next := s.base
	for pos, batches := int64(0), 0; pos < size; batches++ {
		if batches%256 == 0 && l.isClosed() {
			return ErrCleanAborted
		}
		if size-pos < BatchHeaderSize {
			return fmt.Errorf("%d stray bytes at %d", size-pos, pos)
		}
		buf = buf[:BatchHeaderSize]
		if _, err := io.ReadFull(r, buf); err != nil {
			return fmt.Errorf("read at %d: %w", pos, err)
		}
		h, _ := ParseBatchHeader(buf)
		if h.Length < minBatchLength || h.Size() > size-pos {
			return fmt.Errorf("batch at %d: length %d", pos, h.Length)
		}
		buf = slices.Grow(buf, int(h.Size())-len(buf))[:h.Size()]
		if _, err := io.ReadFull(r, buf[BatchHeaderSize:]); err != nil {
			return fmt.Errorf("read at %d: %w", pos, err)
		}
		if _, bad := recordbatch.Check(buf, true); bad != nil {
			return fmt.Errorf("batch at %d: %w", pos, bad)
		}
		if h.BaseOffset < next {
			return fmt.Errorf("batch at %d: offset %d after %d", pos, h.BaseOffset, next)
		}
		if err := fn(buf, h); err != nil {
			return err
		}
		next = h.LastOffset() + 1
		pos += h.Size()
	}
	return nil
}

func (l *Log) isClosed() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.closed
}

// cleaner is one cleaning's filter state.
type cleaner struct {
	l          *Log
	cfg        Config
	offsets    map[string]int64
	now        int64 // ms
	newHorizon int64 // delete horizon for batches first seen with tombstones
	horizon    int64 // earliest horizon of a written batch holding tombstones, -1 if none
	stats      *CleanStats
	recs, kept []recordbatch.Record
	txns       *txnScan
	txnKept    map[int64]bool // producer -> a record of its current transaction was kept
}

// filter appends to dst what survives of one batch.
func (c *cleaner) filter(dst, batch []byte, h BatchHeader) ([]byte, error) {
	if h.Control() && !isMarker(h) {
		return append(dst, batch...), nil
	}
	var err error
	if c.recs, err = recordbatch.Records(c.recs[:0], batch, h, c.cfg.Codecs, maxDecompressedBytes); err != nil {
		return dst, err
	}
	hasHorizon := h.DeleteHorizon()
	if h.Control() {
		return c.filterMarker(dst, batch, h, hasHorizon)
	}
	c.stats.Records += int64(len(c.recs))
	if h.Transactional() && c.txns.abortedAt(h.ProducerID, h.BaseOffset) {
		c.stats.AbortedRemoved += int64(len(c.recs))
		return dst, nil
	}
	c.kept = c.kept[:0]
	tombstones := false
	for _, r := range c.recs {
		if r.Key == nil {
			c.stats.KeylessRemoved++
			continue
		}
		if newest, ok := c.offsets[string(r.Key)]; ok && h.BaseOffset+r.OffsetDelta < newest {
			continue
		}
		if r.Value == nil {
			if hasHorizon && c.now >= h.FirstTimestamp {
				c.stats.TombstonesRemoved++
				continue
			}
			tombstones = true
		}
		c.kept = append(c.kept, r)
	}
	c.stats.RecordsKept += int64(len(c.kept))
	if len(c.kept) == 0 {
		return dst, nil
	}
	if h.Transactional() {
		c.txnKept[h.ProducerID] = true
	}
	horizon := int64(-1)
	if hasHorizon {
		horizon = h.FirstTimestamp
	} else if tombstones {
		horizon = c.newHorizon
	}
	if tombstones && (c.horizon < 0 || horizon < c.horizon) {
		c.horizon = horizon
	}
	if len(c.kept) == len(c.recs) && (hasHorizon || !tombstones) {
		return append(dst, batch...), nil
	}
	return rebuildBatch(dst, h, c.kept, horizon, c.cfg.Codecs)
}

// filterMarker keeps a transaction marker while a record of its transaction
// is left (those come before it, so the filter has seen them all); once
// none is, it stamps the marker's delete horizon, and drops it on a pass
// past that.
func (c *cleaner) filterMarker(dst, batch []byte, h BatchHeader, hasHorizon bool) ([]byte, error) {
	kept := c.txnKept[h.ProducerID]
	delete(c.txnKept, h.ProducerID)
	if kept {
		return append(dst, batch...), nil
	}
	if hasHorizon && c.now >= h.FirstTimestamp {
		c.stats.MarkersRemoved++
		return dst, nil
	}
	horizon := c.newHorizon
	if hasHorizon {
		horizon = h.FirstTimestamp
	}
	if c.horizon < 0 || horizon < c.horizon {
		c.horizon = horizon
	}
	if hasHorizon {
		return append(dst, batch...), nil
	}
	return rebuildBatch(dst, h, c.recs, horizon, c.cfg.Codecs)
}

// cleanGroup rewrites plan.segs[start:end] into one segment and swaps it in.
// It returns the log's segment generation after the swap.
func (c *cleaner) cleanGroup(plan cleanPlan, start, end int, gen uint64) (uint64, error) {
	l := c.l
	base := plan.segs[start].base
	groupEnd := plan.ends[end-1]
	paths := swapPaths(l.dir, base, groupEnd)
	removeAll := func() {
		for _, p := range []string{paths.logCleaned, paths.offCleaned, paths.timeCleaned} {
			os.Remove(p)
		}
	}
	out, err := os.OpenFile(paths.logCleaned, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return gen, fmt.Errorf("clean %s: %w", l.dir, err)
	}
	w := bufio.NewWriterSize(out, 256<<10)
	st := emptySegState(base)
	var ob, tb, buf []byte
	changed := end-start > 1
	for i := start; i < end; i++ {
		c.stats.Segments++
		c.stats.BytesBefore += plan.sizes[i]
		err = l.eachBatch(plan.segs[i], plan.sizes[i], func(batch []byte, h BatchHeader) error {
			var err error
			if buf, err = c.filter(buf[:0], batch, h); err != nil || len(buf) == 0 {
				changed = changed || len(buf) == 0
				return err
			}
			nh, _ := ParseBatchHeader(buf)
			changed = changed || len(buf) != len(batch) || nh.CRC != h.CRC
			ob, tb = st.track(base, st.size, nh, plan.cfg.IndexIntervalBytes, ob, tb)
			_, err = w.Write(buf)
			return err
		})
		if err != nil {
			break
		}
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil && changed {
		err = out.Sync()
	}
	out.Close()
	if err == nil && changed {
		err = writeSynced(paths.offCleaned, ob)
	}
	if err == nil && changed {
		err = writeSynced(paths.timeCleaned, tb)
	}
	if err != nil || !changed {
		removeAll()
		if err == nil {
			c.stats.BytesAfter += st.size
			return gen, nil // nothing to drop here: the old segment stands
		}
		if errors.Is(err, ErrCleanAborted) {
			return gen, err
		}
		return gen, fmt.Errorf("clean %s: segments %d..%d: %w", l.dir, base, groupEnd, err)
	}
	swapStep("cleaned")
	gen, err = l.swapIn(plan.segs[start:end], paths, st, gen, c.horizon)
	if err != nil {
		removeAll()
		return gen, err
	}
	c.stats.SegmentsWritten++
	c.stats.BytesAfter += st.size
	return gen, nil
}

// writeSynced creates path with b and fsyncs it.
func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.Write(b); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// swapFiles names the files of one group's swap.
type swapFiles struct {
	logCleaned, offCleaned, timeCleaned string
	logSwap, offSwap, timeSwap          string
	log, off, time                      string
}

func swapPaths(dir string, base, end int64) swapFiles {
	log := segmentName(dir, base, logSuffix)
	off := segmentName(dir, base, offsetSuffix)
	tim := segmentName(dir, base, timeIndexSuffix)
	return swapFiles{
		logCleaned: log + cleanedSuffix, offCleaned: off + cleanedSuffix, timeCleaned: tim + cleanedSuffix,
		logSwap: fmt.Sprintf("%s.%020d%s", log, end, swapSuffix), offSwap: off + swapSuffix, timeSwap: tim + swapSuffix,
		log: log, off: off, time: tim,
	}
}

// parseLogSwap returns the base and end offsets of a "%020d.log.%020d.swap".
func parseLogSwap(name string) (base, end int64, ok bool) {
	stem, ok := strings.CutSuffix(name, swapSuffix)
	if !ok {
		return 0, 0, false
	}
	b, e, ok := strings.Cut(stem, logSuffix+".")
	if !ok || len(b) != 20 || len(e) != 20 {
		return 0, 0, false
	}
	base, err1 := strconv.ParseInt(b, 10, 64)
	end, err2 := strconv.ParseInt(e, 10, 64)
	return base, end, err1 == nil && err2 == nil && base >= 0 && end > base
}

// swapIn replaces old (consecutive closed segments) by the cleaned segment
// whose files paths names, following the protocol at the top of this file.
func (l *Log) swapIn(old []*segment, paths swapFiles, st segState, gen uint64, horizon int64) (uint64, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed || l.segGen != gen {
		return gen, ErrCleanAborted
	}
	i := slices.Index(l.segs, old[0])
	if i < 0 || i+len(old) >= len(l.segs) || !slices.Equal(l.segs[i:i+len(old)], old) {
		return gen, ErrCleanAborted
	}
	base := old[0].base
	end := l.segs[i+len(old)].base
	markCleaned := func() error {
		cleaned, h := max(l.cleanedTo, end), l.deleteHorizon
		if horizon >= 0 && (h < 0 || horizon < h) {
			h = horizon
		}
		if cleaned == l.cleanedTo && h == l.deleteHorizon {
			return nil
		}
		if err := writeCleanerCheckpoint(l.dir, cleaned, h); err != nil {
			return err
		}
		l.mu.Lock()
		l.cleanedTo, l.deleteHorizon = cleaned, h
		l.mu.Unlock()
		return nil
	}
	// Pin every old file so a reader never has to reopen one that is
	// being renamed over or removed.
	var pinned []*fileHandle
	unpin := func() {
		for _, h := range pinned {
			h.release()
		}
	}
	for _, s := range old {
		for _, h := range []*fileHandle{s.log, s.offIdx, s.tsIdx} {
			if _, err := h.acquire(); err != nil {
				unpin()
				return gen, fmt.Errorf("clean %s: %w", l.dir, err)
			}
			pinned = append(pinned, h)
		}
	}
	defer unpin()
	steps := [][2]string{{paths.offCleaned, paths.offSwap}, {paths.timeCleaned, paths.timeSwap}, {paths.logCleaned, paths.logSwap}}
	for _, s := range steps {
		if err := os.Rename(s[0], s[1]); err != nil {
			os.Remove(paths.offSwap)
			os.Remove(paths.timeSwap)
			return gen, fmt.Errorf("clean %s: %w", l.dir, err)
		}
		swapStep("rename " + filepath.Base(s[1]))
	}
	if err := atomicfile.SyncDir(l.dir); err != nil {
		// The swap may or may not be durable; Open will finish it either
		// way, but this process must not go on as if it had not begun.
		return gen, fmt.Errorf("clean %s: commit swap: %w", l.dir, err)
	}
	doomed := make([]int64, 0, len(old)-1)
	for _, s := range old[1:] {
		doomed = append(doomed, s.base)
	}
	if err := completeSwap(l.dir, paths, doomed, markCleaned); err != nil {
		return gen, fmt.Errorf("clean %s: %w", l.dir, err)
	}
	s := newSegment(l.dir, base, l.files)
	s.st = st
	segs := slices.Concat(l.segs[:i], []*segment{s}, l.segs[i+len(old):])
	l.segGen++
	l.mu.Lock()
	l.segs = segs
	l.mu.Unlock()
	for _, o := range old {
		o.close()
	}
	return l.segGen, nil
}

// completeSwap is steps 4 and 5: delete the group's other segments (doomed,
// by base offset), move the index swaps over the first segment's, advance
// the cleaner checkpoint (markCleaned), and move the log swap over the first
// segment's log. Idempotent, so Open can redo it.
func completeSwap(dir string, paths swapFiles, doomed []int64, markCleaned func() error) error {
	for _, b := range doomed {
		for _, suffix := range []string{offsetSuffix, timeIndexSuffix, logSuffix} {
			if err := os.Remove(segmentName(dir, b, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove cleaned-away segment: %w", err)
			}
			swapStep("remove " + filepath.Base(segmentName(dir, b, suffix)))
		}
	}
	for _, s := range [][2]string{{paths.offSwap, paths.off}, {paths.timeSwap, paths.time}, {paths.logSwap, paths.log}} {
		if s[0] == paths.logSwap {
			if err := markCleaned(); err != nil {
				return fmt.Errorf("finish swap: %w", err)
			}
			swapStep("checkpoint")
		}
		if err := os.Rename(s[0], s[1]); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("finish swap: %w", err)
		}
		swapStep("rename " + filepath.Base(s[1]))
	}
	return atomicfile.SyncDir(dir)
}

// finishSwaps runs at Open, before segments are listed: it completes every
// committed swap and deletes what uncommitted ones left.
func finishSwaps(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	type swap struct{ base, end int64 }
	var swaps []swap
	for _, e := range entries {
		if b, e, ok := parseLogSwap(e.Name()); ok {
			swaps = append(swaps, swap{b, e})
		}
	}
	for _, s := range swaps {
		// The swap's name says which offsets it covers, so the segments it
		// replaces are those starting inside them.
		var doomed []int64
		for _, e := range entries {
			if b, ok := parseSegmentName(e.Name()); ok && b > s.base && b < s.end {
				doomed = append(doomed, b)
			}
		}
		markCleaned := func() error {
			cleaned, _ := readCleanerCheckpoint(dir)
			return writeCleanerCheckpoint(dir, max(cleaned, s.end), 0)
		}
		if err := completeSwap(dir, swapPaths(dir, s.base, s.end), doomed, markCleaned); err != nil {
			return fmt.Errorf("finish cleaning of segment %d: %w", s.base, err)
		}
	}
	if len(swaps) > 0 {
		if entries, err = os.ReadDir(dir); err != nil {
			return err
		}
	}
	removed := false
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, cleanedSuffix) || strings.HasSuffix(name, offsetSuffix+swapSuffix) || strings.HasSuffix(name, timeIndexSuffix+swapSuffix) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			removed = true
		}
	}
	if removed {
		return atomicfile.SyncDir(dir)
	}
	return nil
}

// finishClean records that everything below cleanEnd has been cleaned and
// the earliest delete horizon left in it.
func (l *Log) finishClean(cleanEnd, horizon int64, gen uint64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed || l.segGen != gen {
		return ErrCleanAborted
	}
	cleaned := max(l.cleanedTo, cleanEnd)
	if cleaned == l.cleanedTo && horizon == l.deleteHorizon {
		return nil
	}
	if err := writeCleanerCheckpoint(l.dir, cleaned, horizon); err != nil {
		return fmt.Errorf("clean %s: %w", l.dir, err)
	}
	l.mu.Lock()
	l.cleanedTo, l.deleteHorizon = cleaned, horizon
	l.mu.Unlock()
	return nil
}

// The cleaner checkpoint is three lines: a version (0), the first dirty
// offset, and the earliest delete horizon in ms (-1 if none).
func writeCleanerCheckpoint(dir string, cleanedTo, horizon int64) error {
	return writeFileAtomic(dir, cleanerCheckpointFile, fmt.Appendf(nil, "0\n%d\n%d\n", cleanedTo, horizon))
}

// readCleanerCheckpoint returns 0, -1 (nothing cleaned) if the file is
// missing or unreadable; a compacted log then allows gaps everywhere anyway
// (Config.Compact), and the next cleaning maps the whole log.
func readCleanerCheckpoint(dir string) (cleanedTo, horizon int64) {
	b, err := os.ReadFile(filepath.Join(dir, cleanerCheckpointFile))
	if err != nil {
		return 0, -1
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 || lines[0] != "0" {
		return 0, -1
	}
	c, err1 := strconv.ParseInt(lines[1], 10, 64)
	h, err2 := strconv.ParseInt(lines[2], 10, 64)
	if err1 != nil || err2 != nil || c < 0 {
		return 0, -1
	}
	return c, h
}
