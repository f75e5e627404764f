package tier

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spool-log/spool/internal/atomicfile"
)

// A restore rebuilds a partition whose replicas all lost their disks from
// the store, up to its last uploaded segment, as Redpanda's topic recovery
// (redpanda.remote.recovery) does: the topic is created again with
// remote.storage.recovery=true (`spool topic restore`), and each replica
// that starts the new partition's group afresh takes the store's copy of
// the manifest as its own and starts its empty local log at the copy's
// end. The records below are served from the store as any remote segment
// is; produces continue after them. Every replica that starts the group
// reads the same copy (no leader exists to rewrite it, the old ones being
// gone), so all number records alike; one joining later (a slow open, a
// move) takes its leader's snapshot and merges the copy as any replica
// behind a snapshot does.

// RestoreLog is a new partition's empty local log as a restore needs it
// (*partition.Log implements it).
type RestoreLog interface {
	EndOffset() int64
	// RestartAt empties the log and starts it at offset.
	RestartAt(offset int64) error
}

// ErrNoStore is a restore asked of a node with no store configured.
var ErrNoStore = errors.New("remote.storage.recovery: this node has no remote store (--remote-storage-endpoint)")

// Restored is what a restore found in the store.
type Restored struct {
	// Found says the store holds a manifest copy for the partition;
	// without one the partition starts empty at 0.
	Found bool
	// Start and End are the restored remote range [Start, End): the
	// local log starts at End.
	Start, End int64
	Segments   int
	Bytes      int64
	// Producers says the producer snapshot of the restored end was
	// found and handed on.
	Producers bool
}

// Restore rebuilds the remote side of the new partition (topic, index) in
// dir from the store: its manifest becomes the store's copy, written
// durably, then log restarts at the copy's end. The caller asks it only of
// a replica starting the group afresh (no Raft state, an empty log, not a
// joiner), before the replica and OpenManifest open. A crash part way is
// finished by asking again (the manifest first, then the log; a log
// already past the end is left alone). No lock is held: it reads the store.
//
// seedProducers, when set, is given the producer snapshot uploaded beside
// the last segment (the producers' state as of the restored end) before
// the log restarts, so the partition recognises an idempotent retry of a
// batch only the store holds (node/hosted's ProducerSeedFile).
func (t *Service) Restore(dir, topic string, index int32, log RestoreLog, seedProducers func([]byte) error) (Restored, error) {
	if t == nil {
		return Restored{}, ErrNoStore
	}
	ctx, cancel := context.WithTimeout(t.ctx, ReadTimeout)
	defer cancel()
	start, segs, found, err := readManifestCopy(ctx, t.store, t.layout, topic, index)
	if err != nil {
		return Restored{}, fmt.Errorf("restore %s/%d from the store: %w", topic, index, err)
	}
	if !found || len(segs) == 0 {
		return Restored{Found: found}, nil
	}
	r := Restored{Found: true, Start: max(start, segs[0].Base), End: segs[len(segs)-1].Next, Segments: len(segs)}
	for _, s := range segs {
		r.Bytes += s.Size
	}
	if err := atomicfile.Write(filepath.Join(dir, ManifestFile), EncodeManifest(start, segs), 0o644); err != nil {
		return Restored{}, fmt.Errorf("restore %s/%d: write remote manifest: %w", topic, index, err)
	}
	if last := segs[len(segs)-1]; seedProducers != nil && last.FileSizes[fileProducers] > 0 && last.FileSizes[fileProducers] <= maxProducerSnapshot {
		b, err := getObject(ctx, t.store, t.layout, topic, index, last, fileProducers)
		if err != nil {
			return Restored{}, fmt.Errorf("restore %s/%d: read the producer snapshot: %w", topic, index, err)
		}
		if err := seedProducers(b); err != nil {
			return Restored{}, fmt.Errorf("restore %s/%d: producer snapshot: %w", topic, index, err)
		}
		r.Producers = true
	}
	if log.EndOffset() < r.End {
		if err := log.RestartAt(r.End); err != nil {
			return Restored{}, fmt.Errorf("restore %s/%d: start the local log at %d: %w", topic, index, r.End, err)
		}
	}
	t.log.WithField("topic", topic).WithField("partition", index).WithField("remote_start", r.Start).
		WithField("remote_end", r.End).WithField("segments", r.Segments).WithField("producer_state", r.Producers).Info("remote storage: partition restored from the store")
	return r, nil
}
