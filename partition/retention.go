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
