package node

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/partition"
	"github.com/spool-log/spool/wire"
)

// txnIndex is a partition's transaction state for read_committed: the
// first offset of every producer's open transaction (whose oldest is the
// last stable offset) and the aborted transactions (Kafka's .txnindex:
// producer, first offset, marker offset).
//
// It is derived from the committed log alone, on whichever replica serves
// reads, by scanning batch headers (and the record of each control batch)
// from where it last stopped up to the high watermark: committed entries
// are never truncated, so what it learnt stays true, and a follower that
// becomes leader builds its own from its own log, which Raft made equal to
// the old leader's. It is kept in memory and rebuilt after a restart by
// the first read_committed read, from the log start: one 61-byte header
// read per batch, so bounded by the partition's batch count (not
// persisted, unlike Kafka's per-segment .txnindex: a later step). The
// aborted list is trimmed to the log start as retention moves it.
type txnIndex struct {
	mu      sync.Mutex
	scanned int64           // offsets below are indexed; -1: never scanned
	open    map[int64]int64 // producer id -> first offset of its open transaction
	aborted []abortedTxn    // by marker offset
}

type abortedTxn struct {
	pid         int64
	first, last int64 // last: the abort marker's offset
}

// update scans the committed log from where the index stopped. Called
// with x.mu held.
func (x *txnIndex) update(p *localPartition) error {
	start, hw := p.replica.LogStartOffset(), p.replica.HighWatermark()
	if x.open == nil || x.scanned > hw || x.scanned < start {
		// Never scanned, or the log was replaced under it (a snapshot
		// installed, records deleted below): from the log start.
		x.open = make(map[int64]int64)
		x.aborted = x.aborted[:0]
		x.scanned = start
	}
	if i := slices.IndexFunc(x.aborted, func(a abortedTxn) bool { return a.last >= start }); i > 0 {
		x.aborted = slices.Delete(x.aborted, 0, i)
	}
	hdr := make([]byte, partition.BatchHeaderSize)
	for x.scanned < hw {
		s, err := p.replica.Read(x.scanned, 1<<20)
		if errors.Is(err, partition.ErrOffsetOutOfRange) {
			x.open = nil
			return nil
		}
		if err != nil {
			return fmt.Errorf("scan transactions of %s: %w", p.dir, err)
		}
		advanced := false
		for _, r := range s.Regions {
			for pos, stop := r.Position, r.Position+r.Length; pos+partition.BatchHeaderSize <= stop; {
				if _, err := r.File.ReadAt(hdr, pos); err != nil {
					s.Release()
					return fmt.Errorf("read batch header at %d in %s: %w", pos, p.dir, err)
				}
				h, err := partition.ParseBatchHeader(hdr)
				if err != nil || h.Size() <= 0 {
					s.Release()
					return fmt.Errorf("parse batch header at %d in %s: %v", pos, p.dir, err)
				}
				if h.LastOffset() >= x.scanned {
					if h.Transactional() && h.ProducerID >= 0 {
						if err := x.note(r.File, pos, h); err != nil {
							s.Release()
							return err
						}
					}
					x.scanned = h.LastOffset() + 1
					advanced = true
				}
				pos += h.Size()
			}
		}
		s.Release()
		if !advanced {
			break
		}
	}
	return nil
}

// note applies one transactional batch (data or marker).
func (x *txnIndex) note(f interface {
	ReadAt([]byte, int64) (int, error)
}, pos int64, h partition.BatchHeader) error {
	if !h.Control() {
		if _, ok := x.open[h.ProducerID]; !ok {
			x.open[h.ProducerID] = h.BaseOffset
		}
		return nil
	}
	if h.Size() > 1<<16 {
		return fmt.Errorf("control batch of %d bytes at offset %d", h.Size(), h.BaseOffset)
	}
	b := make([]byte, h.Size())
	if _, err := f.ReadAt(b, pos); err != nil {
		return fmt.Errorf("read control batch at offset %d: %w", h.BaseOffset, err)
	}
	rh, err := recordbatch.ParseHeader(b)
	if err != nil {
		return fmt.Errorf("control batch at offset %d: %w", h.BaseOffset, err)
	}
	recs, err := recordbatch.ParseRecords(nil, b[recordbatch.HeaderSize:], rh.NumRecords, rh.LastOffsetDelta)
	if err != nil || len(recs) == 0 || len(recs[0].Key) < 4 {
		return nil // not a transaction marker we can read: leave the state
	}
	abort := recs[0].Key[2] == 0 && recs[0].Key[3] == 0
	first, ok := x.open[h.ProducerID]
	delete(x.open, h.ProducerID)
	if abort && ok {
		x.aborted = append(x.aborted, abortedTxn{pid: h.ProducerID, first: first, last: h.BaseOffset})
	}
	return nil
}

// lso is the last stable offset: the first offset of the oldest open
// transaction, else the high watermark. Called with x.mu held, after
// update.
func (x *txnIndex) lso(hw int64) int64 {
	out := min(hw, x.scanned)
	for _, first := range x.open {
		out = min(out, first)
	}
	return out
}

// abortedIn lists the aborted transactions that may hold records in
// [from, to): those whose marker is at or after from and whose first
// offset is below to, oldest first, as Kafka's collectAbortedTxns.
func (x *txnIndex) abortedIn(from, to int64) []wire.FetchAborted {
	out := []wire.FetchAborted{}
	i, _ := slices.BinarySearchFunc(x.aborted, from, func(a abortedTxn, off int64) int {
		switch {
		case a.last < off:
			return -1
		case a.last > off:
			return 1
		}
		return 0
	})
	for ; i < len(x.aborted); i++ {
		if a := x.aborted[i]; a.first < to {
			out = append(out, wire.FetchAborted{ProducerID: a.pid, FirstOffset: a.first})
		}
	}
	return out
}

// stable returns the partition's last stable offset, scanning what the
// index has not seen yet.
func (p *localPartition) stable() (int64, error) {
	x := &p.txns
	x.mu.Lock()
	defer x.mu.Unlock()
	hw := p.replica.HighWatermark()
	if err := x.update(p); err != nil {
		return 0, err
	}
	return x.lso(hw), nil
}
