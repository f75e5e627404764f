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

// Partition is one hosted partition of a topic that may be tiered.
type Partition struct {
	Topic    string
	Index    int32
	Source   Source
	Manifest *Manifest
	// TxnIndexPath is the partition's aborted-transaction index file
	// (node/hosted), uploaded beside each segment; empty: none.
	TxnIndexPath string
	// ProducerSnapshot, when set, is the partition's producer state to
	// upload beside each segment.
	ProducerSnapshot func() []byte
	// Retention, when set, is the topic's total retention (retention.ms,
	// retention.bytes; <0: unbounded), which remote retention applies.
	Retention func() (age time.Duration, bytes int64)
}
