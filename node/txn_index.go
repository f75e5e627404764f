package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/spool-log/spool/internal/atomicfile"

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
// the old leader's. The aborted list is trimmed to the log start as
// retention moves it.
//
// It is built on the first read_committed read (or DescribeProducers), not
// on open, and persisted as a checkpoint, txn-index in the partition
// directory (JSON: the offset scanned to, open transactions, aborted
// ones), rewritten atomically when an abort was learnt or a million
// offsets were scanned since, at most once a second. A checkpoint is only a
// place to resume: what lies after it is scanned again, so a lost or stale
// one costs time, never correctness; one that does not fit the log (below
// its start, past its high watermark) or whose last batch (base offset,
// leader epoch, CRC) is not in the log as it was (a tail lost in a crash
// under flush policy os, written again) is ignored. Without one, the scan starts at the
// log start: one 61-byte header read per batch, about 3 µs a batch from
// the page cache (TestTxnIndexRebuildCost), so a million batches take some
// 3 s once. Kafka keeps a .txnindex beside each segment instead; one file
// per partition suits a log whose segments the Raft layer and the cleaner
// rewrite.
type txnIndex struct {
	mu      sync.Mutex
	scanned int64 // offsets below are indexed
	// last identifies the last batch scanned (base offset, partition
	// leader epoch, CRC; base -1: none), so a checkpoint can be checked
	// against the log it was taken from.
	last    [3]int64
	open    map[int64]int64 // producer id -> first offset of its open transaction; nil: not built
	aborted []abortedTxn    // by marker offset

	triedFile    bool  // the checkpoint was looked for
	checkpointed int64 // scanned as of the last checkpoint
	dirty        bool  // the aborted list changed since

	// flushMu serialises checkpoint writes, which run outside mu so no
	// fetch waits for an fsync.
	flushMu sync.Mutex
}

// txnIndexFile is the checkpoint's name in the partition directory.
const txnIndexFile = "txn-index"

// txnIndexCheckpoint is the checkpoint's content.
type txnIndexCheckpoint struct {
	Version int              `json:"version"`
	Scanned int64            `json:"scanned"`
	Open    map[string]int64 `json:"open"`    // producer id (decimal) -> first offset
	Aborted [][3]int64       `json:"aborted"` // producer id, first offset, marker offset
	// Last is the last batch scanned: base offset, partition leader
	// epoch, CRC. With flush policy os the log's tail can be lost in a
	// crash while this fsynced file survives, and the tail be written
	// again with other batches: a checkpoint whose last batch is not in
	// the log as it was is refused.
	Last *[3]int64 `json:"last,omitempty"`
}

// loadCheckpoint resumes from the checkpoint if it fits the log [start,
// hw] and its last batch is in the log.
func (x *txnIndex) loadCheckpoint(p *localPartition, start, hw int64) {
	b, err := os.ReadFile(filepath.Join(p.dir, txnIndexFile))
	if err != nil || len(b) > 64<<20 {
		return
	}
	var c txnIndexCheckpoint
	if json.Unmarshal(b, &c) != nil || c.Version != 1 || c.Scanned <= start || c.Scanned > hw || c.Last == nil || !lastBatchIs(p, *c.Last, c.Scanned) {
		return
	}
	open := make(map[int64]int64, len(c.Open))
	for k, v := range c.Open {
		pid, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return
		}
		open[pid] = v
	}
	x.open, x.scanned, x.checkpointed, x.last = open, c.Scanned, c.Scanned, *c.Last
	x.aborted = x.aborted[:0]
	for _, a := range c.Aborted {
		x.aborted = append(x.aborted, abortedTxn{pid: a[0], first: a[1], last: a[2]})
	}
}

// txnCheckpointInterval is how often due txn-index checkpoints are
// written (and at shutdown), off the fetch path.
const txnCheckpointInterval = 5 * time.Second

// flushCheckpoint writes the checkpoint when it is due: an abort was
// learnt or a million offsets scanned since the last. A failed write only
// means a longer scan after a restart.
func (x *txnIndex) flushCheckpoint(dir string) {
	x.flushMu.Lock()
	defer x.flushMu.Unlock()
	x.mu.Lock()
	b, scanned, ok := x.checkpointLocked()
	if ok {
		x.dirty = false
	}
	x.mu.Unlock()
	if !ok {
		return
	}
	err := atomicfile.Write(filepath.Join(dir, txnIndexFile), b, 0o644)
	x.mu.Lock()
	if err == nil {
		x.checkpointed = scanned
	} else {
		x.dirty = true
	}
	x.mu.Unlock()
}

// checkpointLocked encodes the checkpoint if one is due. Called with mu
// held.
func (x *txnIndex) checkpointLocked() ([]byte, int64, bool) {
	if x.open == nil || x.scanned == x.checkpointed || !(x.dirty || x.scanned-x.checkpointed >= 1_000_000) {
		return nil, 0, false
	}
	if x.last[0] < 0 {
		return nil, 0, false // nothing scanned: nothing to resume
	}
	last := x.last
	c := txnIndexCheckpoint{Version: 1, Scanned: x.scanned, Last: &last, Open: make(map[string]int64, len(x.open)), Aborted: make([][3]int64, 0, len(x.aborted))}
	for pid, first := range x.open {
		c.Open[strconv.FormatInt(pid, 10)] = first
	}
	for _, a := range x.aborted {
		c.Aborted = append(c.Aborted, [3]int64{a.pid, a.first, a.last})
	}
	b, _ := json.Marshal(c)
	return b, x.scanned, true
}

// lastBatchIs reports whether the batch ending at scanned-1 in p's log is
// the one last identifies (base offset, leader epoch, CRC).
func lastBatchIs(p *localPartition, last [3]int64, scanned int64) bool {
	s, err := p.replica.Read(last[0], 1)
	if err != nil {
		return false
	}
	defer s.Release()
	if len(s.Regions) == 0 {
		return false
	}
	r := s.Regions[0]
	hdr := make([]byte, partition.BatchHeaderSize)
	if r.Length < int64(len(hdr)) {
		return false
	}
	if _, err := r.File.ReadAt(hdr, r.Position); err != nil {
		return false
	}
	h, err := partition.ParseBatchHeader(hdr)
	return err == nil && h.BaseOffset == last[0] && int64(h.PartitionLeaderEpoch) == last[1] && int64(h.CRC) == last[2] && h.LastOffset()+1 == scanned
}

// flushTxnIndexes writes the due txn-index checkpoints of the local
// partitions.
func (n *Node) flushTxnIndexes() {
	for _, p := range n.localPartitions() {
		p.txns.flushCheckpoint(p.dir)
	}
}

// txnScanHook, when set (tests), runs before each read of a scan.
var txnScanHook func()

type abortedTxn struct {
	pid         int64
	first, last int64 // last: the abort marker's offset
}

// update scans the committed log from where the index stopped. Called
// with x.mu held.
func (x *txnIndex) update(p *localPartition) error {
	start, hw, end := p.replica.LogStartOffset(), p.replica.HighWatermark(), p.replica.LogEndOffset()
	if x.open == nil && !x.triedFile {
		x.triedFile = true
		x.loadCheckpoint(p, start, hw)
	}
	if x.open == nil || x.scanned > end || x.scanned < start {
		// Never scanned, or the log was replaced under it (a snapshot
		// installed, records deleted below): from the log start.
		x.open = make(map[int64]int64)
		x.aborted = x.aborted[:0]
		x.scanned = start
		x.last = [3]int64{-1, 0, 0}
		x.dirty = true
	}
	if i := slices.IndexFunc(x.aborted, func(a abortedTxn) bool { return a.last >= start }); i > 0 {
		x.aborted = slices.Delete(x.aborted, 0, i)
		x.dirty = true
	}
	restarts := 0
	for x.scanned < hw {
		if txnScanHook != nil {
			txnScanHook()
		}
		s, err := p.replica.Read(x.scanned, 1<<20)
		if errors.Is(err, partition.ErrOffsetOutOfRange) {
			// Retention (or DeleteRecords) moved the log start past
			// the scan: what is open is known only from the new start
			// on (a marker may have gone with the rest), so scan from
			// there, a few times at most, rather than answer without
			// the open transactions.
			if start := p.replica.LogStartOffset(); start > x.scanned && restarts < 3 {
				restarts++
				clear(x.open)
				x.scanned = start
				x.last = [3]int64{-1, 0, 0}
				x.dirty = true
				continue
			}
			return fmt.Errorf("scan transactions of %s: %w", p.dir, err)
		}
		if err != nil {
			return fmt.Errorf("scan transactions of %s: %w", p.dir, err)
		}
		next, err := s.EachBatchHeader(x.scanned, func(f *os.File, pos int64, h partition.BatchHeader) error {
			if h.Transactional() && h.ProducerID >= 0 {
				if err := x.note(f, pos, h); err != nil {
					return err
				}
			}
			x.last = [3]int64{h.BaseOffset, int64(h.PartitionLeaderEpoch), int64(h.CRC)}
			return nil
		})
		s.Release()
		advanced := next > x.scanned
		x.scanned = next
		if err != nil {
			return fmt.Errorf("scan transactions of %s: %w", p.dir, err)
		}
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
	b, err := readControlBatch(f, pos, h)
	if err != nil {
		return err
	}
	commit, _, ok := parseMarker(b)
	if !ok {
		return nil // not a transaction marker we can read: leave the state
	}
	abort := !commit
	first, ok := x.open[h.ProducerID]
	delete(x.open, h.ProducerID)
	if abort && ok {
		x.aborted = append(x.aborted, abortedTxn{pid: h.ProducerID, first: first, last: h.BaseOffset})
		x.dirty = true
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
