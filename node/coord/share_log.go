package coord

import (
	"errors"
	"fmt"
	"os"

	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/share"
	"github.com/spool-log/spool/partition"
)

// ShareLog is a led partition's log as node/share reads it.
func ShareLog(p *hosted.Partition) share.Log { return shareLog{p} }

type shareLog struct{ p *hosted.Partition }

func (l shareLog) Bounds(readCommitted bool) (int64, int64, error) {
	hwm, start := l.p.Replica.HighWatermark(), l.p.Replica.LogStartOffset()
	if !readCommitted {
		return start, hwm, nil
	}
	err := l.p.Txns.Refresh(l.p.Replica, l.p.Dir)
	return start, l.p.Txns.StableOffset(hwm, start), err
}

func (l shareLog) Read(from, upTo int64, maxBytes int) ([]share.Batch, error) {
	s, err := l.p.Replica.ReadUpTo(from, maxBytes, upTo)
	if errors.Is(err, partition.ErrOffsetOutOfRange) {
		return nil, nil // the SPSO is clamped to the log start next time
	}
	if err != nil {
		return nil, err
	}
	defer s.Release()
	var out []share.Batch
	_, err = s.EachBatchHeader(from, func(f *os.File, pos int64, h partition.BatchHeader) error {
		raw := make([]byte, h.Size())
		if _, err := f.ReadAt(raw, pos); err != nil {
			return fmt.Errorf("read batch at %d in %s: %w", pos, f.Name(), err)
		}
		out = append(out, share.Batch{Header: h, Raw: raw})
		return nil
	})
	return out, err
}

func (l shareLog) LeaderEpoch() int32 { return l.p.Replica.LeaderEpoch() }

func (l shareLog) Aborted(from, to int64) []share.Aborted {
	list := l.p.Txns.AbortedBetween(from, to)
	out := make([]share.Aborted, len(list))
	for i, a := range list {
		out[i] = share.Aborted{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset}
	}
	return out
}
