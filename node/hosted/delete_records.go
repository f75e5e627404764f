package hosted

import (
	"context"
	"errors"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/partition"
)

// DeleteRecords moves the log start offset up to offset (-1: the high
// watermark) through the replica (DeleteRecords) and runs a retention pass
// for the segments wholly below it. It returns the log start offset
// afterwards; an offset beyond the high watermark, or negative other than
// -1, is partition.ErrOffsetOutOfRange with the start as it is. A
// replicated partition's new start waits for the leader to apply it,
// within timeout (at least a second): replica.ErrOutcomeUnknown when it
// did not; replica.ErrNotLeader and partition.ErrClosed when the replica
// was deposed or closed meanwhile.
func (p *Partition) DeleteRecords(ctx context.Context, offset int64, timeout time.Duration) (int64, error) {
	hwm := p.Replica.HighWatermark()
	if offset == -1 {
		offset = hwm
	}
	if offset < 0 || offset > hwm {
		return p.Replica.LogStartOffset(), partition.ErrOffsetOutOfRange
	}
	log := p.log.WithFields(logrus.Fields{"topic": p.Topic, "partition": p.Index})
	ctx, cancel := context.WithTimeout(ctx, max(timeout, time.Second))
	defer cancel()
	start, err := p.Replica.DeleteRecordsBefore(ctx, offset)
	if err != nil {
		return start, err
	}
	deleted, err := p.Replica.EnforceRetention()
	if err != nil && !errors.Is(err, partition.ErrClosed) {
		log.WithError(err).Warn("retention after delete records")
	}
	log.WithFields(logrus.Fields{"log_start_offset": start, "segments_deleted": deleted}).Info("records deleted")
	return start, nil
}
