package partition

import (
	"errors"
	"os"
	"path/filepath"
	"time"
)

// ShutdownPoint is a log's recovery point as its node recorded it, with
// every other log of the data dir, in one file at shutdown (the node's
// shutdown checkpoint), instead of each log rewriting its own
// recovery-point-checkpoint: two fsyncs per log, which thousands of logs
// turn into a stop of many seconds. It is only a speed-up: without it, or
// when it is stale, Open falls back to the log's own recovery point and
// walks what that does not vouch for.
type ShutdownPoint struct {
	// Offset is the log end at close: every segment before the last is
	// vouched for. CleanBase and CleanSize are the last segment's base
	// and size then, so an unchanged last segment need not be walked.
	Offset, CleanBase, CleanSize int64
	// Written is when the node's file was written. The log's own
	// recovery-point-checkpoint written after it (by a build that does
	// not know the node's file, which changed the log) makes it stale.
	Written time.Time
}

// vouches tells whether p may stand in for the recovery point in dir.
func (p *ShutdownPoint) vouches(dir string) bool {
	if p == nil || p.Offset < 0 || p.CleanBase < 0 || p.CleanSize < 0 || p.CleanBase > p.Offset {
		return false
	}
	st, err := os.Stat(filepath.Join(dir, recoveryPointFile))
	if errors.Is(err, os.ErrNotExist) {
		return true // a log never flushed: its creation wrote none
	}
	return err == nil && !st.ModTime().After(p.Written)
}

// CloseForShutdown is Close for a node's shutdown: what was written is
// made durable as Close does, but the log's recovery point is returned,
// for the node's shutdown checkpoint, rather than written beside the
// segments, and the directory is fsynced only if something in it may not
// be durable yet. The log's own recovery point stays as it was: valid,
// only older, so a start without the node's file walks more of the log.
func (l *Log) CloseForShutdown() (ShutdownPoint, error) {
	return l.close(false)
}
