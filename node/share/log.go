package share

import "github.com/spool-log/spool/internal/recordbatch"

// Batch is one whole record batch read from a partition's log: its header
// and its bytes as stored (the bytes a ShareFetch sends).
type Batch struct {
	Header recordbatch.Header
	Raw    []byte
}

// Aborted is an aborted transaction that may hold records in a range.
type Aborted struct {
	ProducerID  int64
	FirstOffset int64
}

// Log is one partition's log as a share partition reads it; the caller
// builds it on the partition's leader. Its methods may do disk I/O and
// are never called with a lock of this package held.
type Log interface {
	// Bounds are the log start offset and the offset below which records
	// may be delivered: the high watermark, or the last stable offset
	// when readCommitted.
	Bounds(readCommitted bool) (start, upTo int64, err error)
	// Read returns the whole batches from the one holding from up to
	// (not including) upTo, about maxBytes of them and at least one.
	Read(from, upTo int64, maxBytes int) ([]Batch, error)
	// Aborted lists, by first offset, the aborted transactions that may
	// hold records in [from, to).
	Aborted(from, to int64) []Aborted
	// LeaderEpoch is the partition's leader epoch on this leader.
	LeaderEpoch() int32
}

// Persister keeps share partitions' snapshots durable (Node builds it
// over the __share_group_state topic). Its methods may make
// network calls and append to a replicated log; they are never called
// with a lock of this package held.
type Persister interface {
	// Claim returns k's latest snapshot (false: none yet) for a leader in
	// epoch, after which the store refuses writes from older epochs.
	Claim(k Key, epoch int32) (Snapshot, bool, error)
	// Write stores s as k's latest snapshot, durably, or fails; a
	// snapshot from an epoch older than one claimed or written is
	// refused.
	Write(k Key, s Snapshot) error
	// Read returns k's latest snapshot without claiming it (false: none).
	Read(k Key) (Snapshot, bool, error)
	// Forget removes k's state (its offsets deleted).
	Forget(k Key) error
}
