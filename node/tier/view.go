package tier

import (
	"context"
	"errors"
	"time"

	"github.com/spool-log/spool/partition"
)

// ReadTimeout bounds a fetch's wait for the store.
const ReadTimeout = 30 * time.Second

// LocalLog is a hosted partition's local log as the read side needs it
// (*replica.Replica implements it).
type LocalLog interface {
	LogStartOffset() int64
}

// View is one hosted partition's remote side as the Fetch and ListOffsets
// handlers ask it, below the local log start. With tiered storage off, or
// a topic not tiered, it answers as the local log alone would.
type View struct {
	t     *Service
	m     *Manifest // nil: not tiered
	topic string
	index int32
	local LocalLog
}

// View is the remote side of the partition (topic, index) in dir.
func (t *Service) View(dir, topic string, index int32, local LocalLog) View {
	m, _ := t.manifest(dir)
	return View{t: t, m: m, topic: topic, index: index, local: local}
}

// LogStart is the partition's first offset a consumer may read: the
// remote start for a tiered partition with remote segments.
func (v View) LogStart() int64 {
	start := v.local.LogStartOffset()
	if v.m != nil && len(v.m.Segments()) > 0 {
		start = min(start, v.m.Start())
	}
	return start
}

// Gap says whether offset, below the local log start, is one this
// replica cannot answer for yet: a snapshot moved its log past remote
// records it has not caught up on (Manifest.Gap). The answer is
// OFFSET_NOT_AVAILABLE, which clients retry, never OFFSET_OUT_OF_RANGE,
// which makes them reset (and a consumer from the start lose the range).
func (v View) Gap(offset int64) bool {
	return v.m != nil && offset < v.local.LogStartOffset() && v.m.Gap(offset)
}

// Behind says whether the remote log start is not known here yet
// (Manifest.Behind): ListOffsets answers OFFSET_NOT_AVAILABLE.
func (v View) Behind() bool { return v.m != nil && v.m.Behind() }

// Read reads below the local log start from the store
// (partition.ErrOffsetOutOfRange when it does not have the offset).
func (v View) Read(offset int64, maxBytes int, upTo int64) (*partition.Slice, error) {
	if v.m == nil {
		return nil, partition.ErrOffsetOutOfRange
	}
	ctx, cancel := context.WithTimeout(v.t.ctx, ReadTimeout)
	defer cancel()
	s, err := v.t.reader.Read(ctx, v.topic, v.index, v.m, offset, maxBytes, upTo)
	if errors.Is(err, ErrNotRemote) {
		return nil, partition.ErrOffsetOutOfRange
	}
	return s, err
}

// Aborted lists the aborted transactions that may hold records in [from,
// to) of the remote segment holding from, for a read_committed fetch that
// Read answered (its Slice ends within that segment).
func (v View) Aborted(from, to int64) ([]AbortedTxn, error) {
	if v.m == nil {
		return nil, nil
	}
	s, ok := v.m.Find(from)
	if !ok {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(v.t.ctx, ReadTimeout)
	defer cancel()
	return v.t.reader.Aborted(ctx, v.topic, v.index, s, from, to)
}

// OffsetForTime is ListOffsets by timestamp over the remote segments
// below the local log start: ok when a remote batch is that new.
func (v View) OffsetForTime(ts int64) (offset, timestamp int64, ok bool, err error) {
	if v.m == nil || v.m.Start() >= v.local.LogStartOffset() {
		return 0, 0, false, nil
	}
	ctx, cancel := context.WithTimeout(v.t.ctx, ReadTimeout)
	defer cancel()
	off, t, ok, err := v.t.reader.OffsetForTime(ctx, v.topic, v.index, v.m, ts)
	if ok && off >= v.local.LogStartOffset() {
		ok = false // the local log answers it
	}
	return off, t, ok, err
}

// LeaderEpochs is the partition's leader-epoch cache for
// OffsetForLeaderEpoch: the remote records' epochs (Manifest.Epochs)
// below the local log start, then local, the replica's own cache (oldest
// first, starting at the local log start). An epoch that continues across
// the local start keeps its remote start.
func (v View) LeaderEpochs(local []partition.EpochEntry) []partition.EpochEntry {
	if v.m == nil {
		return local
	}
	localStart := v.local.LogStartOffset()
	remote := v.m.Epochs(localStart)
	if len(local) > 0 {
		// What the local cache covers is its to answer; a remote
		// epoch newer than its first cannot precede it.
		keep := 0
		for keep < len(remote) && remote[keep].Epoch <= local[0].Epoch && remote[keep].StartOffset < local[0].StartOffset {
			keep++
		}
		remote = remote[:keep]
		if n := len(remote); n > 0 && remote[n-1].Epoch == local[0].Epoch {
			local = local[1:]
		}
	}
	return append(remote, local...)
}

// Bytes is the size of the remote segments, and whether the partition is
// tiered.
func (v View) Bytes() (int64, bool) {
	if v.m == nil {
		return 0, false
	}
	return v.m.Bytes(), true
}

// End is the offset after the last uploaded record, if any.
func (v View) End() (int64, bool) {
	if v.m == nil || len(v.m.Segments()) == 0 {
		return 0, false
	}
	return v.m.End(), true
}
