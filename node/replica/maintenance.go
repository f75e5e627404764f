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
// could no longer number its entries): the topic's retention picks the
// offset, and the last committed entry ending at or below it becomes the
// Raft snapshot (raftlog.Compact), which moves the start and deletes the
// segments below. Each replica compacts its own log; a follower that then
// needs what its leader no longer has gets a snapshot ("log start moved").
//
// With a remote log (tiered storage) a single copy's retention is the
// replica's too, held at what was uploaded: the cut moves the log start
// (DeleteRecordsBefore at a segment base) and the segments below go.
func (r *Replica) EnforceRetention() (int, error) {
	if r.rg == nil && r.remote == nil {
		return r.log.EnforceRetention()
	}
	cut := r.retentionCut()
	if cut <= r.log.StartOffset() {
		if r.rg == nil {
			return r.log.EnforceRetention() // DeleteRecords moved the start
		}
		return 0, nil
	}
	before := r.log.SegmentCount()
	if r.rg == nil {
		if _, err := r.log.DeleteRecordsBefore(min(cut, r.hw.Load())); err != nil {
			return 0, err
		}
		return r.log.EnforceRetention()
	}
	if err := r.rg.compactBelow(cut); err != nil {
		return 0, err
	}
	return max(before-r.log.SegmentCount(), 0), nil
}

// NeedsCleaning tells whether a compacted log has enough dirty bytes to be
// worth a cleaner pass; DirtyRatio says how dirty it is.
func (r *Replica) NeedsCleaning() bool { return r.log.NeedsCleaning() }

// DirtyRatio is the log's dirty ratio and its dirty bytes.
func (r *Replica) DirtyRatio() (float64, int64) { return r.log.DirtyRatio() }

// Clean compacts the log up to the high watermark, never above it: a record
// not yet committed is not the newest of its key for sure.
//
// A replicated log is cleaned only below its Raft log: each batch there is
// an entry raft may still send, byte for byte. So the entries of the closed
// segments are sealed into the snapshot first (raftlog.Seal), which leaves
// their records to the cleaner, as each Kafka replica cleans its own log;
// a follower that needs them later copies them with the snapshot.
func (r *Replica) Clean(mapBytes int) (partition.CleanStats, error) {
	upTo := r.hw.Load()
	if r.rg != nil {
		if err := r.rg.sealForCleaning(); err != nil {
			return partition.CleanStats{}, err
		}
		upTo = min(upTo, r.rg.st.SnapshotOffset())
	}
	return r.log.Clean(upTo, mapBytes)
}

// Scrub checks every closed batch's CRC, paced by pace (partition.Log.Scrub).
func (r *Replica) Scrub(pace func(n int64) error) (partition.ScrubResult, error) {
	return r.log.Scrub(pace)
}

// KnownCorrupt lists the damaged batches scrubs and recovery found.
func (r *Replica) KnownCorrupt() []partition.Corruption { return r.log.KnownCorrupt() }

// Config is the log's configuration (the topic's settings).
func (r *Replica) Config() partition.Config {
	c := r.log.Config()
	if r.ownsRetention() {
		r.mu.Lock()
		c.RetentionAge, c.RetentionBytes = r.retentionAge, r.retentionBytes
		r.mu.Unlock()
	}
	return c
}

// SetConfig replaces the log's configuration (an altered topic). A
// replicated log keeps the retention settings for EnforceRetention and
// runs with its own retention off.
func (r *Replica) SetConfig(c partition.Config) {
	if r.ownsRetention() {
		r.mu.Lock()
		r.retentionAge, r.retentionBytes = c.RetentionAge, c.RetentionBytes
		r.mu.Unlock()
		c = r.raftLogConfig(c)
	}
	r.log.SetConfig(c)
}

// ownsRetention: the replica, not the log, applies the topic's retention
// (a Raft log, or a log with a remote copy).
func (r *Replica) ownsRetention() bool { return r.rg != nil || r.remote != nil }

// raftLogConfig is what a replicated log runs with: no retention of its
// own, and with DriverConfig.Sync every append fsynced before raft's
// messages go out.
func (r *Replica) raftLogConfig(c partition.Config) partition.Config {
	c.RetentionAge, c.RetentionBytes = -1, -1
	if r.rgSync {
		c.Flush = partition.FlushEveryAppend
	}
	return c
}

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
