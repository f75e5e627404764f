package replica

import (
	"context"
	"fmt"

	"github.com/spool-log/spool/node/replica/raftlog"
	"github.com/spool-log/spool/partition"
)

// Read returns file regions (for sendfile) of whole batches from the one
// holding offset, for at most maxBytes (the first batch whole regardless),
// never reaching the high watermark: uncommitted records are not served.
// Errors are the log's: partition.ErrOffsetOutOfRange, ErrCorrupt,
// ErrClosed. The caller releases the Slice once sent.
func (r *Replica) Read(offset int64, maxBytes int) (*partition.Slice, error) {
	return r.log.Read(offset, maxBytes, r.hw.Load())
}

// ReadUpTo is Read stopping before upTo too (a read_committed fetch's
// last stable offset), never past the high watermark.
func (r *Replica) ReadUpTo(offset int64, maxBytes int, upTo int64) (*partition.Slice, error) {
	return r.log.Read(offset, maxBytes, min(upTo, r.hw.Load()))
}

// LogStartOffset is the first offset still held (retention and
// DeleteRecords move it up).
func (r *Replica) LogStartOffset() int64 { return r.log.StartOffset() }

// LogEndOffset is the offset the next append gets on this replica, at or
// above the high watermark.
func (r *Replica) LogEndOffset() int64 { return r.log.EndOffset() }

// OffsetForTime finds the first committed batch whose max timestamp is at
// or after ts: its base offset and max timestamp, or -1, -1 if none.
func (r *Replica) OffsetForTime(ts int64) (offset, timestamp int64, err error) {
	off, bts, err := r.log.OffsetForTime(ts)
	if err != nil {
		return -1, -1, err
	}
	if bts < 0 || off >= r.hw.Load() {
		return -1, -1, nil
	}
	return off, bts, nil
}

// Size is the bytes of the replica's segments.
func (r *Replica) Size() int64 { return r.log.Size() }

// SegmentCount is how many segments the log has.
func (r *Replica) SegmentCount() int { return r.log.SegmentCount() }

// DeleteRecordsBefore moves the log start up to offset (DeleteRecords),
// durably before it returns, and returns the log start afterwards. An
// offset above the high watermark is partition.ErrOffsetOutOfRange: only
// committed records may be deleted. Only the leader takes it (ErrNotLeader).
// With Raft the new start is a command entry every replica applies at its
// place in the log (raftlog.DeleteBefore); the answer waits until this
// replica applied it, or ctx ends (ErrOutcomeUnknown).
func (r *Replica) DeleteRecordsBefore(ctx context.Context, offset int64) (int64, error) {
	if !r.IsLeader() {
		return r.log.StartOffset(), ErrNotLeader
	}
	if hw := r.hw.Load(); offset > hw {
		return r.log.StartOffset(), fmt.Errorf("delete records before %d above the high watermark %d: %w", offset, hw, partition.ErrOffsetOutOfRange)
	}
	if r.rg != nil {
		if offset <= r.log.StartOffset() {
			return r.log.StartOffset(), nil
		}
		err := r.rg.proposeCommand(ctx, raftlog.DeleteRecordsCommand(offset))
		return r.log.StartOffset(), err
	}
	return r.log.DeleteRecordsBefore(offset)
}
