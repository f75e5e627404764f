package replica

import (
	"errors"

	"github.com/spool-log/spool/partition"
)

// EnforceRetention deletes the closed segments retention (or a moved log
// start) has expired and returns how many went. The active segment, which
// holds everything not yet committed, is never one of them.
//
// With Raft the log's own retention must not move the log start (raftlog
// could no longer number its entries); retention there becomes
// raftlog.Compact below the commit point, which is not wired yet: a
// replicated log keeps everything for now.
func (r *Replica) EnforceRetention() (int, error) {
	if r.rg != nil {
		return 0, nil
	}
	return r.log.EnforceRetention()
}

// NeedsCleaning tells whether a compacted log has enough dirty bytes to be
// worth a cleaner pass; DirtyRatio says how dirty it is.
// A replicated log is never cleaned yet: the cleaner drops whole batches,
// and each batch is a Raft entry every replica must keep numbered alike.
func (r *Replica) NeedsCleaning() bool { return r.rg == nil && r.log.NeedsCleaning() }

// DirtyRatio is the log's dirty ratio and its dirty bytes.
func (r *Replica) DirtyRatio() (float64, int64) { return r.log.DirtyRatio() }

// Clean compacts the log up to the high watermark, never above it: a record
// not yet committed is not the newest of its key for sure.
func (r *Replica) Clean(mapBytes int) (partition.CleanStats, error) {
	return r.log.Clean(r.hw.Load(), mapBytes)
}

// Scrub checks every closed batch's CRC, paced by pace (partition.Log.Scrub).
func (r *Replica) Scrub(pace func(n int64) error) (partition.ScrubResult, error) {
	return r.log.Scrub(pace)
}

// KnownCorrupt lists the damaged batches scrubs and recovery found.
func (r *Replica) KnownCorrupt() []partition.Corruption { return r.log.KnownCorrupt() }

// Config is the log's configuration (the topic's settings).
func (r *Replica) Config() partition.Config { return r.log.Config() }

// SetConfig replaces the log's configuration (an altered topic).
func (r *Replica) SetConfig(c partition.Config) { r.log.SetConfig(c) }

// Flush makes everything appended durable.
func (r *Replica) Flush() error { return r.log.Flush() }

// Close wakes every waiter (commit waits fail with partition.ErrClosed,
// long polls answer) and closes the log, durably: node shutdown.
func (r *Replica) Close() error {
	r.shut()
	return errors.Join(r.closeRaft(), r.log.Close())
}

// Release is Close that also waits out a cleaning in progress, so that the
// directory may be moved afterwards (a dropped partition's quarantine).
func (r *Replica) Release() error {
	r.shut()
	return errors.Join(r.closeRaft(), r.log.Release())
}

func (r *Replica) closeRaft() error {
	if r.rg == nil {
		return nil
	}
	return r.rg.close()
}

func (r *Replica) shut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	close(r.committed)
	r.committed = make(chan struct{})
	r.notifyLocked()
}
