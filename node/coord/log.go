package coord

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/partition"
)

// commitTimeout bounds a coordinator's commit's wait for its replication,
// and a forwarded share-state request.
const commitTimeout = 30 * time.Second

// internalLog is group.Log on the replicas of __consumer_offsets (and
// txn.Log on those of __transaction_state, share.StoreLog on those of
// __share_group_state): commits go through a replica's produce path like
// any producer's batch, with acks=all.
type internalLog struct {
	b     Broker
	topic string
}

func (l internalLog) Append(p int32, batch []byte) error {
	lp, e := l.b.Leader(l.topic, p)
	if e != nil {
		return e
	}
	// A commit is acknowledged only once it is on disk, whatever the
	// broker's default flush policy: the append itself fsyncs, which is
	// far cheaper than a Flush (that also rewrites the recovery point).
	if c := lp.Replica.Config(); c.Flush != partition.FlushEveryAppend {
		c.Flush = partition.FlushEveryAppend
		lp.Replica.SetConfig(c)
	}
	// Bounded: a leader cut off from its group's majority never learns
	// whether the commit happened (replica.ErrOutcomeUnknown).
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	_, err := lp.Replica.Produce(ctx, batch, replica.AcksAll)
	if errors.Is(err, replica.ErrNotLeader) {
		return kerr.NotLeaderForPartition
	}
	if err != nil {
		return fmt.Errorf("append to %s-%d: %w", l.topic, p, err)
	}
	return nil
}

func (l internalLog) Replay(p int32, fn func([]byte) error) error {
	lp, e := l.b.Leader(l.topic, p)
	if e != nil {
		return e
	}
	const chunk = 1 << 20
	off, end := lp.Replica.LogStartOffset(), lp.Replica.HighWatermark()
	for off < end {
		s, err := lp.Replica.Read(off, chunk)
		if err != nil {
			return fmt.Errorf("read %s-%d at %d: %w", l.topic, p, off, err)
		}
		buf := make([]byte, 0, s.Size())
		for _, r := range s.Regions {
			b := make([]byte, r.Length)
			if _, err := r.File.ReadAt(b, r.Position); err != nil {
				s.Release()
				return fmt.Errorf("read %s-%d at %d: %w", l.topic, p, off, err)
			}
			buf = append(buf, b...)
		}
		s.Release()
		if len(buf) == 0 {
			return nil
		}
		next := off
		for pos := 0; pos+partition.BatchHeaderSize <= len(buf); {
			h, err := partition.ParseBatchHeader(buf[pos:])
			if err != nil || h.Size() <= 0 || pos+int(h.Size()) > len(buf) {
				return fmt.Errorf("parse batch of %s-%d at offset %d: %v", l.topic, p, next, err)
			}
			next = h.LastOffset() + 1
			pos += int(h.Size())
		}
		if next <= off {
			return fmt.Errorf("replay of %s-%d stuck at offset %d", l.topic, p, off)
		}
		if err := fn(buf); err != nil {
			return fmt.Errorf("replay %s-%d: %w", l.topic, p, err)
		}
		off = next
	}
	return nil
}
