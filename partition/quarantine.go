package partition

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/spool-log/spool/internal/atomicfile"
)

// Recovery follows Kafka's log layer: a segment is walked batch by batch and
// cut at the first bad byte, and since offsets must stay contiguous, the
// segments after a cut cannot stay in the log either. Kafka deletes both;
// Spool keeps them. The cut tail of a segment is copied, and whole segments
// are moved, into the quarantine directory (DATA/quarantine/ on a node), one
// entry per drop named "<UTC time>-<partition dir>-<segment file>" (".tail"
// appended for a cut tail), before anything leaves the log, so what recovery
// drops is never lost and an operator can look at it, replay it or reclaim it
// (`spool quarantine`). Every drop is reported through Config.OnCorruption.

// quarantineTimeFormat names quarantine entries by when they were made.
const quarantineTimeFormat = "20060102T150405Z"

// Corruption describes damage found in a segment: bytes recovery cut or moved
// to quarantine, or a batch a scrub found damaged (left in place).
type Corruption struct {
	// Segment is the segment's file (its path in the log directory).
	Segment string `json:"segment"`
	// Position is the byte position in Segment of the first damaged or
	// dropped byte.
	Position int64 `json:"position"`
	// Offset is the first offset the damage or drop takes from readers: the
	// offset a whole batch at Position would have started with.
	Offset int64 `json:"offset"`
	// EndOffset is the offset after the last one affected, as far as the
	// damaged bytes still tell: -1 if they do not.
	EndOffset int64 `json:"end_offset"`
	// Bytes is how many bytes were dropped, or the damaged batch's size.
	Bytes  int64  `json:"bytes"`
	Reason string `json:"reason"`
	// Quarantine is where dropped bytes are kept; empty for a scrub finding,
	// which moves nothing.
	Quarantine string `json:"quarantine,omitempty"`
}

func (c Corruption) String() string {
	s := fmt.Sprintf("%s at byte %d (offset %d", c.Segment, c.Position, c.Offset)
	if c.EndOffset >= 0 {
		s += fmt.Sprintf(" to %d", c.EndOffset-1)
	}
	s += fmt.Sprintf(", %d bytes): %s", c.Bytes, c.Reason)
	if c.Quarantine != "" {
		s += "; kept in " + c.Quarantine
	}
	return s
}

// quarantineDir is where this log's dropped bytes go.
func (l *Log) quarantineDir() string {
	if l.cfg.QuarantineDir != "" {
		return l.cfg.QuarantineDir
	}
	return filepath.Join(filepath.Dir(l.dir), "quarantine")
}

func (l *Log) report(c Corruption) {
	if l.cfg.OnCorruption != nil {
		l.cfg.OnCorruption(c)
	}
}

// quarantinePath is a new, unused path in the quarantine directory for what,
// a file of this log's directory: "<UTC time>-<partition dir>-<what>", with
// ".1", ".2", ... appended if a drop of the same second took the name.
func (l *Log) quarantinePath(what string) (string, error) {
	dir := l.quarantineDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create quarantine dir %s: %w", dir, err)
	}
	stem := filepath.Join(dir, l.cfg.Clock().UTC().Format(quarantineTimeFormat)+"-"+filepath.Base(l.dir)+"-"+what)
	for i := 0; ; i++ {
		p := stem
		if i > 0 {
			p += "." + strconv.Itoa(i)
		}
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			return p, nil
		}
	}
}

// keepTail copies bytes [pos, size) of the segment file f into quarantine and
// makes the copy durable, so that f may be truncated at pos.
func (l *Log) keepTail(s *segment, f *os.File, pos, size int64) (string, error) {
	path, err := l.quarantinePath(filepath.Base(s.log.path) + ".tail")
	if err != nil {
		return "", err
	}
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", fmt.Errorf("quarantine tail of %s: %w", s.log.path, err)
	}
	_, err = io.Copy(out, io.NewSectionReader(f, pos, size-pos))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = atomicfile.SyncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(path)
		return "", fmt.Errorf("quarantine tail of %s in %s: %w", s.log.path, path, err)
	}
	return path, nil
}

// quarantineSegment moves a segment's log file into quarantine and deletes its
// indexes, which are only ever derived from it.
func (l *Log) quarantineSegment(s *segment) (string, error) {
	path, err := l.quarantinePath(filepath.Base(s.log.path))
	if err != nil {
		return "", err
	}
	for _, h := range []*fileHandle{s.log, s.offIdx, s.tsIdx} {
		h.forget()
	}
	if err := moveFile(s.log.path, path); err != nil {
		return "", fmt.Errorf("quarantine segment %s: %w", s.log.path, err)
	}
	if err := atomicfile.SyncDir(filepath.Dir(path)); err != nil {
		return "", err
	}
	for _, h := range []*fileHandle{s.offIdx, s.tsIdx} {
		if err := os.Remove(h.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("delete index of quarantined segment: %w", err)
		}
	}
	return path, atomicfile.SyncDir(l.dir)
}

// moveFile renames from to to, copying across file systems (a quarantine
// directory configured on another disk).
func moveFile(from, to string) error {
	err := os.Rename(from, to)
	if !errors.Is(err, syscall.EXDEV) {
		return err
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(to)
		return err
	}
	return os.Remove(from)
}

// claimedEnd is the offset after the last one the batch headers in bytes
// [pos, size) of f claim, trusting their lengths from pos while each has
// magic 2 and an offset past the one before; a header whose batch runs off
// the end still counts, and ends the walk. -1 if the first does not qualify.
func claimedEnd(f *os.File, pos, size int64) int64 {
	end := int64(-1)
	var b [BatchHeaderSize]byte
	for size-pos >= BatchHeaderSize {
		if _, err := f.ReadAt(b[:], pos); err != nil {
			break
		}
		h, _ := ParseBatchHeader(b[:])
		if h.Magic != 2 || h.Length < minBatchLength || h.LastOffsetDelta < 0 || h.BaseOffset < end {
			break
		}
		end = h.LastOffset() + 1
		pos += h.Size()
	}
	return end
}
