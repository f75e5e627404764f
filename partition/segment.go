package partition

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/spool-log/spool/internal/recordbatch"
)

const (
	logSuffix       = ".log"
	offsetSuffix    = ".index"
	timeIndexSuffix = ".timeindex"
)

// segment is one %020d.log file and its two indexes. Its files are opened
// through the FileCache on demand, so an idle segment is just this struct.
type segment struct {
	base               int64
	log, offIdx, tsIdx *fileHandle

	// st is written by the appender (holding Log.appendMu) under Log.mu and
	// read by everyone under Log.mu.
	st segState
	// pendOff and pendTime hold the newest index entries, not yet written to
	// the index files: writing them in batches of indexFlushBytes saves two
	// syscalls per append. Guarded like st; st's entry counts include them.
	pendOff, pendTime []byte
	// memOff is the newest entries of the offset index, contiguous up to
	// the last (a suffix of the index, perhaps empty), kept for the
	// active segment only: a fetch near the tail then finds its position
	// without a pread per step of the binary search, which cost a syscall
	// each, about a third of the node's CPU serving 256 KiB fetches. It
	// holds at most 2*memIndexEntries entries (32 KiB), trimmed to the
	// newest memIndexEntries, so a partition's memory does not grow with
	// its segment; older positions are searched in the file, as they are
	// for sealed segments. Appended in place under the same rule as
	// pendOff, and dropped when the segment rolls.
	memOff []byte
	// next is where the last Read of this segment ended: the relative
	// offset (high half) of the batch starting at that position (low
	// half). A consumer reading on from there, the usual case, starts
	// without an index lookup. Zero, offset base at position 0, is always
	// true; anything that rewrites the segment in place resets it.
	next atomic.Uint64
	// bad is the batches a scrub found damaged, by position; Read will not
	// serve them. Guarded by Log.mu, and replaced rather than edited, so a
	// Read may walk the map it saw under mu after letting go; nil for none.
	bad map[int64]Corruption
}

// memIndexEntries is how many of the newest offset index entries the
// active segment keeps in memory after a trim: with the default 4 KiB
// index interval, positions in its last 8 MiB.
const memIndexEntries = 2048

// withMemEntries is memOff with add appended, trimmed to the newest
// memIndexEntries once past twice that. A trim copies into a new array, so
// readers of the old one are undisturbed.
func withMemEntries(memOff, add []byte) []byte {
	memOff = append(memOff, add...) // past every reader's length
	if len(memOff) > 2*memIndexEntries*offsetEntrySize {
		memOff = append([]byte(nil), memOff[len(memOff)-memIndexEntries*offsetEntrySize:]...)
	}
	return memOff
}

// hintNext records that the batch at pos starts at offset.
func (s *segment) hintNext(offset, pos int64) {
	if relOK(s.base, offset) && pos >= 0 && pos <= math.MaxUint32 {
		s.next.Store(uint64(offset-s.base)<<32 | uint64(pos))
	}
}

// hinted is the position of the batch starting at relative offset rel, if
// a Read ended there.
func (s *segment) hinted(rel uint32) (int64, bool) {
	h := s.next.Load()
	if uint32(h>>32) != rel || h == 0 {
		return 0, false
	}
	return int64(uint32(h)), true
}

// indexFlushBytes bounds the index entries a segment holds in memory.
const indexFlushBytes = 1024

func offsetEntryAt(b []byte, i int) offsetEntry {
	return offsetEntry{rel: binary.BigEndian.Uint32(b[i*offsetEntrySize:]), pos: binary.BigEndian.Uint32(b[i*offsetEntrySize+4:])}
}

func timeEntryAt(b []byte, i int) timeEntry {
	return timeEntry{ts: int64(binary.BigEndian.Uint64(b[i*timeEntrySize:])), rel: binary.BigEndian.Uint32(b[i*timeEntrySize+8:])}
}

// fileOffEntries and fileTimeEntries count the entries in the index files.
func (s *segment) fileOffEntries() int  { return s.st.offEntries - len(s.pendOff)/offsetEntrySize }
func (s *segment) fileTimeEntries() int { return s.st.timeEntries - len(s.pendTime)/timeEntrySize }

// stageIndex adds entries to a segment's pending ones, writing them all to
// the file at fileEntries once they pass indexFlushBytes. It returns the new
// pending entries, to publish under Log.mu. Bytes past a pending slice's
// length are never read, so appending in place races with no reader.
func stageIndex(h *fileHandle, pending, add []byte, fileEntries, entrySize int) ([]byte, error) {
	if len(add) == 0 {
		return pending, nil
	}
	pending = append(pending, add...)
	if len(pending) < indexFlushBytes {
		return pending, nil
	}
	if err := writeAtHandle(h, pending, int64(fileEntries)*int64(entrySize)); err != nil {
		return nil, err
	}
	return pending[:0], nil
}

// segState is everything about a segment's contents that is kept in memory.
// Readers see only what an append has published here, never a half-written
// batch.
type segState struct {
	size        int64 // bytes of whole, published batches
	next        int64 // offset after the last batch
	maxTS       int64 // newest batch maxTimestamp, -1 if empty
	maxTSOffset int64 // base offset of the first batch with maxTS
	rollStart   int64 // broker clock (ms) at the first append, or at Open; drives segment.ms
	offEntries  int   // offset index entries written
	timeEntries int   // time index entries written
	lastTimeTS  int64 // timestamp of the last time index entry, -1 if none
	sinceIndex  int64 // log bytes since the last offset index entry
	dirty       bool  // written since the last fsync
}

func segmentName(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d", base)+suffix)
}

// parseSegmentName returns the base offset of a %020d.log name.
func parseSegmentName(name string) (int64, bool) {
	stem, ok := strings.CutSuffix(name, logSuffix)
	if !ok || len(stem) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(stem, 10, 64)
	return base, err == nil && base >= 0
}

func newSegment(dir string, base int64, files *FileCache) *segment {
	return &segment{
		base:   base,
		log:    files.handle(segmentName(dir, base, logSuffix)),
		offIdx: files.handle(segmentName(dir, base, offsetSuffix)),
		tsIdx:  files.handle(segmentName(dir, base, timeIndexSuffix)),
		st:     emptySegState(base),
	}
}

func emptySegState(base int64) segState {
	return segState{next: base, maxTS: -1, maxTSOffset: -1, lastTimeTS: -1}
}

// createSegment makes empty files for a new segment, replacing any leftovers.
func createSegment(dir string, base int64, files *FileCache) (*segment, error) {
	s := newSegment(dir, base, files)
	if err := s.createFiles(); err != nil {
		return nil, err
	}
	return s, nil
}

// createFiles makes the segment's three files empty.
func (s *segment) createFiles() error {
	for _, h := range []*fileHandle{s.log, s.offIdx, s.tsIdx} {
		f, err := os.OpenFile(h.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return fmt.Errorf("create segment %s: %w", h.path, err)
		}
		f.Close()
	}
	return nil
}

// remove forgets the segment's files and unlinks them. Slices still being
// sent keep their descriptors, so their bytes stay readable until released.
func (s *segment) remove() error {
	var first error
	for _, h := range []*fileHandle{s.log, s.offIdx, s.tsIdx} {
		h.forget()
		if err := os.Remove(h.path); err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
			first = fmt.Errorf("delete segment file: %w", err)
		}
	}
	return first
}

// close drops the segment's descriptors once idle (Log.Close).
func (s *segment) close() {
	s.log.forget()
	s.offIdx.forget()
	s.tsIdx.forget()
}

// sync fsyncs the log and both indexes. A segment deleted meanwhile needs
// no sync.
func (s *segment) sync() error {
	for _, h := range []*fileHandle{s.log, s.offIdx, s.tsIdx} {
		f, err := h.acquire()
		if errors.Is(err, errFileGone) {
			return nil
		}
		if err != nil {
			return err
		}
		err = f.Sync()
		h.release()
		if err != nil {
			return fmt.Errorf("fsync %s: %w", h.path, err)
		}
	}
	return nil
}

// track advances st past the batch h written at pos and appends the index
// entries that batch earns to ob and tb. Append and recovery both use it, so
// a rebuilt index is byte for byte the one appends would have written.
func (st *segState) track(base, pos int64, h BatchHeader, interval int, ob, tb []byte) ([]byte, []byte) {
	indexed := false
	if st.sinceIndex >= int64(interval) && pos > 0 {
		ob = putOffsetEntry(ob, offsetEntry{rel: uint32(h.BaseOffset - base), pos: uint32(pos)})
		st.offEntries++
		st.sinceIndex = 0
		indexed = true
	}
	st.sinceIndex += h.Size()
	if h.MaxTimestamp > st.maxTS {
		st.maxTS, st.maxTSOffset = h.MaxTimestamp, h.BaseOffset
	}
	if indexed && st.maxTS > st.lastTimeTS {
		tb = putTimeEntry(tb, timeEntry{ts: st.maxTS, rel: uint32(st.maxTSOffset - base)})
		st.timeEntries++
		st.lastTimeTS = st.maxTS
	}
	st.size = pos + h.Size()
	st.next = h.LastOffset() + 1
	return ob, tb
}

// readHeaderAt reads the batch header at pos of a log file.
func readHeaderAt(f *os.File, pos int64) (BatchHeader, error) {
	var b [BatchHeaderSize]byte
	headerReadHook(f.Name())
	if _, err := f.ReadAt(b[:], pos); err != nil {
		return BatchHeader{}, fmt.Errorf("read batch header at %s:%d: %w", f.Name(), pos, err)
	}
	return ParseBatchHeader(b[:])
}

// load brings a segment whose data is known durable into memory cheaply: it
// sanity-checks both indexes and reads only the batch headers after the last
// offset index entry. maxRel bounds the segment's relative offsets. gaps
// allows the offset gaps the log cleaner leaves between batches. Any
// inconsistency is returned as an error, and the caller rebuilds by recover.
func (s *segment) load(maxRel int64, gaps bool) error {
	fi, err := os.Stat(s.log.path)
	if err != nil {
		return err
	}
	size := fi.Size()
	if size > maxSegmentBytes {
		return fmt.Errorf("segment %s is %d bytes, beyond the index's reach", s.log.path, size)
	}
	sum, err := checkIndexes(s.offIdx.path, s.tsIdx.path, size, maxRel)
	if err != nil {
		return err
	}
	st := emptySegState(s.base)
	st.offEntries, st.timeEntries = sum.offsetEntries, sum.timeEntries
	pos := int64(0)
	if sum.offsetEntries > 0 {
		pos = int64(sum.lastOffset.pos)
		st.next = s.base + int64(sum.lastOffset.rel)
	}
	if sum.timeEntries > 0 {
		st.maxTS, st.maxTSOffset, st.lastTimeTS = sum.lastTime.ts, s.base+int64(sum.lastTime.rel), sum.lastTime.ts
	}
	st.sinceIndex = size - pos
	f, err := s.log.acquire()
	if err != nil {
		return err
	}
	defer s.log.release()
	for pos < size {
		h, err := readHeaderAt(f, pos)
		if err != nil {
			return err
		}
		if h.Magic != 2 || h.Length < minBatchLength || h.Size() > size-pos || !followsAt(h.BaseOffset, st.next, gaps) ||
			!relOK(s.base, h.LastOffset()) || int64(h.LastOffset()-s.base) >= maxRel {
			return fmt.Errorf("batch at %s:%d does not follow its index", s.log.path, pos)
		}
		if h.MaxTimestamp > st.maxTS {
			st.maxTS, st.maxTSOffset = h.MaxTimestamp, h.BaseOffset
		}
		st.next = h.LastOffset() + 1
		pos += h.Size()
	}
	st.size = size
	s.st = st
	s.pendOff, s.pendTime = nil, nil
	return nil
}

// recover walks the whole segment, checking every batch's length, CRC and
// format and that offsets ascend from the segment's base, rebuilds both
// indexes from what it finds, and truncates the log at the first bad byte.
// epochOK says whether a batch may carry the leader epoch it does (the
// epoch field is not under the CRC, so the epoch cache vouches for it). gaps
// accepts what the log cleaner writes: offset gaps between batches, and
// batches holding fewer records than their offset range. keep, unless nil,
// is given the bytes about to be cut (file f from pos to size, next the
// offset expected at pos, and why the walk stopped) and must have kept them
// when it returns nil; an error stops recovery with nothing cut. recover
// reports whether anything was cut.
func (s *segment) recover(interval int, epochOK func(offset int64, epoch int32) bool, gaps bool,
	keep func(f *os.File, pos, size, next int64, reason string) error) (truncated bool, err error) {
	f, err := s.log.acquire()
	if err != nil {
		return false, err
	}
	defer s.log.release()
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("stat %s: %w", s.log.path, err)
	}
	size := fi.Size()
	reason := ""
	if size > maxSegmentBytes {
		size = maxSegmentBytes // whatever lies past the index's reach is cut
		reason = "bytes beyond the offset index's 2 GiB reach"
	}
	st := emptySegState(s.base)
	var ob, tb []byte
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 64<<10)
	buf := make([]byte, 0, 64<<10)
	pos := int64(0)
	for pos < size {
		if size-pos < BatchHeaderSize {
			reason = fmt.Sprintf("%d bytes, too few for a batch header", size-pos)
			break
		}
		buf = buf[:BatchHeaderSize]
		if _, err := io.ReadFull(r, buf); err != nil {
			return false, fmt.Errorf("recover %s at %d: %w", s.log.path, pos, err)
		}
		h, _ := ParseBatchHeader(buf)
		if h.Length < minBatchLength || h.Size() > size-pos {
			reason = fmt.Sprintf("batch length %d does not fit the %d bytes left", h.Length, size-pos)
			break
		}
		if int64(cap(buf)) < h.Size() {
			nb := make([]byte, h.Size())
			copy(nb, buf)
			buf = nb
		}
		buf = buf[:h.Size()]
		if _, err := io.ReadFull(r, buf[BatchHeaderSize:]); err != nil {
			return false, fmt.Errorf("recover %s at %d: %w", s.log.path, pos, err)
		}
		if _, bad := recordbatch.Check(buf, gaps); bad != nil {
			reason = bad.Error()
			break
		}
		// Offsets are assigned contiguously, so anything else is damage to
		// the baseOffset field, which the CRC does not cover.
		if !followsAt(h.BaseOffset, st.next, gaps) || !relOK(s.base, h.LastOffset()) {
			reason = fmt.Sprintf("batch offsets %d to %d do not follow offset %d", h.BaseOffset, h.LastOffset(), st.next-1)
			break
		}
		if !epochOK(h.BaseOffset, h.PartitionLeaderEpoch) {
			reason = fmt.Sprintf("leader epoch %d is not the one the epoch cache gives offset %d", h.PartitionLeaderEpoch, h.BaseOffset)
			break
		}
		ob, tb = st.track(s.base, pos, h, interval, ob, tb)
		pos += h.Size()
	}
	if pos < fi.Size() {
		if keep != nil {
			if err := keep(f, pos, fi.Size(), st.next, reason); err != nil {
				return false, err
			}
		}
		if err := f.Truncate(pos); err != nil {
			return false, fmt.Errorf("truncate %s at %d: %w", s.log.path, pos, err)
		}
		truncated = true
	}
	if err := rewriteFile(s.offIdx, ob); err != nil {
		return truncated, err
	}
	if err := rewriteFile(s.tsIdx, tb); err != nil {
		return truncated, err
	}
	st.dirty = true
	s.st = st
	s.pendOff, s.pendTime = nil, nil
	s.next.Store(0)
	s.memOff = withMemEntries(nil, ob) // Log.load keeps it for the last segment only
	return truncated, nil
}

// followsAt reports whether a batch at base may follow a batch ending before
// next: right after it, or past it in a log with cleaner gaps.
func followsAt(base, next int64, gaps bool) bool {
	return base == next || (gaps && base > next)
}

// rewriteFile replaces a file's contents with b (index rebuilds).
func rewriteFile(h *fileHandle, b []byte) error {
	f, err := os.OpenFile(h.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("rebuild %s: %w", h.path, err)
	}
	defer f.Close()
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("rebuild %s: %w", h.path, err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("rebuild %s: %w", h.path, err)
	}
	return nil
}
