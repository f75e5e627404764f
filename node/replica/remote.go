package replica

import (
	"context"
	"fmt"

	"github.com/spool-log/spool/node/replica/raftlog"
	"github.com/spool-log/spool/partition"
)

// RemoteLog is the partition's tiered storage (node/tier) as the replica
// sees it: the records of what was uploaded, applied in log order, and how
// far local retention may go.
type RemoteLog interface {
	// ApplyRemote applies a committed remote-storage record (opaque to
	// the replica). It is called in log order, again after a restart for
	// records above the last snapshot, so it must be idempotent; it
	// returns once the record is durable.
	ApplyRemote(payload []byte) error
	// LocalRetentionFloor is, for a tiered topic, the offset below which
	// local segments may go (the end of the committed uploads) and true;
	// false when the topic is not tiered (local retention is the topic's).
	LocalRetentionFloor() (int64, bool)
	// MarkBehind says a Raft snapshot was applied: the entries it
	// replaced, remote records among them, were never applied here, and
	// the log now starts at localStart. The remote log catches up from
	// elsewhere (node/tier: the store's copy of the manifest). Called in
	// the Raft round: it must not block.
	MarkBehind(localStart int64)
}

// RecordRemote makes a remote-storage record part of the partition's
// replicated state: with Raft a command entry every replica applies at
// its place in the log (the answer waits until this replica applied it,
// or ctx ends: ErrOutcomeUnknown); a single copy applies it at once. Only
// the leader records (ErrNotLeader).
func (r *Replica) RecordRemote(ctx context.Context, payload []byte) error {
	if r.remote == nil {
		return fmt.Errorf("record remote: this replica has no remote log")
	}
	if len(payload) > raftlog.MaxRemotePayload {
		return fmt.Errorf("record remote: %d bytes, above %d", len(payload), raftlog.MaxRemotePayload)
	}
	if !r.IsLeader() {
		return ErrNotLeader
	}
	if r.rg != nil {
		return r.rg.proposeCommand(ctx, raftlog.RemoteCommand(payload))
	}
	return r.remote.ApplyRemote(payload)
}

// ClosedSegments are the log's closed segments (partition.Log), for an
// uploader, which copies only those wholly below the high watermark.
func (r *Replica) ClosedSegments() []partition.SegmentInfo { return r.log.ClosedSegments() }

// LeaderEpochCheckpointPath is the log's leader-epoch checkpoint file.
func (r *Replica) LeaderEpochCheckpointPath() string { return r.log.LeaderEpochCheckpointPath() }

// retentionCut is where retention by the topic's (local) settings would
// cut, held at the remote floor for a tiered topic: a segment goes only
// once its upload is committed.
func (r *Replica) retentionCut() int64 {
	r.mu.Lock()
	age, bytes := r.retentionAge, r.retentionBytes
	r.mu.Unlock()
	cut := r.log.RetentionPoint(age, bytes)
	if r.remote != nil {
		if floor, ok := r.remote.LocalRetentionFloor(); ok {
			cut = min(cut, floor)
		}
	}
	return cut
}
