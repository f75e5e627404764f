package tier

import (
	"context"
	"time"

	"github.com/spool-log/spool/partition"
)

// Source is a partition's replica as tiered storage needs it
// (*replica.Replica implements it).
type Source interface {
	IsLeader() bool
	LeaderEpoch() int32
	HighWatermark() int64
	LogStartOffset() int64
	ClosedSegments() []partition.SegmentInfo
	LeaderEpochCheckpointPath() string
	// LeaderEpochs is the leader-epoch cache, oldest first.
	LeaderEpochs() []partition.EpochEntry
	// RecordRemote makes a record part of the partition's replicated
	// state and returns once this replica applied it.
	RecordRemote(ctx context.Context, payload []byte) error
}

// AbortedFunc lists a partition's aborted transactions that may hold
// records in [base, next) once its last stable offset is at or past next
// (ok false before).
type AbortedFunc func(base, next int64) (txns []AbortedTxn, ok bool, err error)

// ProducerSnapshotFunc is a partition's producer state as of next, built
// on prev (Partition.ProducerSnapshot).
type ProducerSnapshotFunc func(prev []byte, next int64) ([]byte, error)

// Partition is one hosted partition of a topic that may be tiered.
type Partition struct {
	Topic    string
	Index    int32
	Source   Source
	Manifest *Manifest
	// Aborted, when set, lists the aborted transactions that may hold
	// records in [base, next) (a segment's txnindex), ok false while a
	// transaction with a record below next is still open: the segment
	// waits for the last stable offset to pass it. Nil: none ever.
	Aborted AbortedFunc
	// ProducerSnapshot, when set, is the partition's producer state as of
	// next (a segment's end) to upload beside the segment, built from
	// prev, the snapshot uploaded with the segment before (nil: none
	// known), and the segment's batches (node/hosted's SnapshotAt).
	ProducerSnapshot ProducerSnapshotFunc
	// SeedProducers, when set, keeps the producer snapshot of the last
	// recorded segment beside the partition (node/hosted's
	// ProducerSeedFile), on every replica, for its producer state's
	// rebuilds.
	SeedProducers func(snapshot []byte) error
	// Retention, when set, is the topic's total retention (retention.ms,
	// retention.bytes; <0: unbounded), which remote retention applies.
	Retention func() (age time.Duration, bytes int64)
}
