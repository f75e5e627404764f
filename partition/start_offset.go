package partition

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// logStartOffsetFile records a log start offset that DeleteRecords moved
// above the first segment's base (Kafka's log-start-offset-checkpoint, one
// file per partition here). Without it a restart would serve the deleted
// records again until retention removed their segment.
const logStartOffsetFile = "log-start-offset-checkpoint"

// DeleteRecordsBefore moves the log start offset up to offset (DeleteRecords):
// reads below it get ErrOffsetOutOfRange from then on, and retention deletes
// the closed segments that lie wholly below it. The new start is written
// durably before it takes effect, so a record reported deleted stays deleted
// across a crash. An offset at or below the current start changes nothing;
// one past the log end is ErrOffsetOutOfRange. It returns the log start
// offset after the call.
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	l.mu.RLock()
	start, end := l.startLocked(), l.segs[len(l.segs)-1].st.next
	l.mu.RUnlock()
	if offset < 0 || offset > end {
		return start, fmt.Errorf("delete records of %s before %d, log holds [%d, %d): %w", l.dir, offset, start, end, ErrOffsetOutOfRange)
	}
	if offset <= start {
		return start, nil
	}
	if err := writeFileAtomic(l.dir, logStartOffsetFile, encodeLogStart(offset)); err != nil {
		return start, fmt.Errorf("delete records of %s before %d: %w", l.dir, offset, err)
	}
	l.mu.Lock()
	l.logStart = offset
	l.mu.Unlock()
	l.logStartStale = false // the file says offset now
	return offset, nil
}

// startLocked is the log start offset: the first segment's base, or above it
// where DeleteRecords moved it. Called under mu (or appendMu).
func (l *Log) startLocked() int64 { return max(l.logStart, l.segs[0].base) }

func encodeLogStart(offset int64) []byte {
	return fmt.Appendf(nil, "0\n%d\n", offset)
}

// loadLogStart reads the checkpoint after the segments are loaded. A start
// past the recovered end (a crash lost the tail it was set in, or recovery
// cut it) is the end (clampLogStart). A missing
// file is no DeleteRecords; a damaged one (it is replaced atomically, so only
// outside hands damage it) is an error rather than a silent return of
// deleted records.
func (l *Log) loadLogStart() error {
	path := filepath.Join(l.dir, logStartOffsetFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	version, rest, ok := strings.Cut(string(b), "\n")
	off, perr := strconv.ParseInt(strings.TrimSuffix(rest, "\n"), 10, 64)
	if !ok || version != "0" || perr != nil || off < 0 {
		return fmt.Errorf("%s: malformed log start offset %q", path, b)
	}
	l.logStart = off
	l.clampLogStart(l.segs[len(l.segs)-1].st.next)
	return nil
}

// lowerLogStart brings the log start down to offset, where TruncateTo is
// about to cut, durably before the cut: a checkpoint left above the new end
// would hide, at the next open, the records appended after the cut up to it.
// Called with appendMu held, before the cut.
func (l *Log) lowerLogStart(offset int64) error {
	if l.logStart <= offset {
		return nil
	}
	if err := writeFileAtomic(l.dir, logStartOffsetFile, encodeLogStart(offset)); err != nil {
		return err
	}
	l.mu.Lock()
	l.logStart = offset
	l.mu.Unlock()
	l.logStartStale = false
	return nil
}

// clampLogStart brings a log start past end, the log's end after a recovery
// or a cut, down to end, and rewrites the checkpoint to say so: left above
// end, it would hide at the next open the records appended from end up to
// it. If the rewrite fails, Append rewrites it before its batch (as the
// leader-epoch file). Called with appendMu held, or while opening.
func (l *Log) clampLogStart(end int64) {
	if l.logStart <= end {
		return
	}
	l.logStart = end
	l.logStartStale = writeFileAtomic(l.dir, logStartOffsetFile, encodeLogStart(end)) != nil
}

// saveStaleLogStart rewrites a checkpoint clampLogStart failed to lower,
// before Append writes a batch it would hide. Called with appendMu held.
func (l *Log) saveStaleLogStart() error {
	if !l.logStartStale {
		return nil
	}
	if err := writeFileAtomic(l.dir, logStartOffsetFile, encodeLogStart(l.logStart)); err != nil {
		return fmt.Errorf("lower the log start checkpoint of %s to %d: %w", l.dir, l.logStart, err)
	}
	l.logStartStale = false
	return nil
}

// belowLogStart counts the closed segments wholly below the log start, which
// retention deletes. Called with appendMu held.
func (l *Log) belowLogStart(closed []*segment) int {
	n := 0
	for n < len(closed) && closed[n].st.next <= l.logStart {
		n++
	}
	return n
}
