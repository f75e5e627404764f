package hosted

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/spool-log/spool/internal/atomicfile"

	"github.com/spool-log/spool/partition"
	"github.com/spool-log/spool/wire"
)

// TxnIndex is a partition's transaction state for read_committed: the
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
// the page cache (node's TestTxnIndexRebuildCost), so a million batches take some
// 3 s once. Kafka keeps a .txnindex beside each segment instead; one file
// per partition suits a log whose segments the Raft layer and the cleaner
// rewrite.
//
// Locks: scanMu, then mu. scanMu is held by the one request that scans (the
// scan reads the log and can take seconds); mu guards the state below and
// is held only to read or publish it, never across a read of the log or a
// file write. A request that finds a scan running does not wait for it: it
// answers from what the scan has published so far, which is always a
// consistent prefix (everything below scanned), so its last stable offset is
// at most the true one. flushMu, then mu: FlushCheckpoint encodes under mu
// and writes the file outside it.
//
// The zero TxnIndex is ready to use: empty, built on the first Refresh.
type TxnIndex struct {
	// scanMu serialises scans; triedFile is the scanner's own.
	scanMu    sync.Mutex
	triedFile bool // the checkpoint was looked for

	mu      sync.Mutex
	scanned int64 // offsets below are indexed
	// last identifies the last batch scanned (base offset, partition
	// leader epoch, CRC; base -1: none), so a checkpoint can be checked
	// against the log it was taken from.
	last    [3]int64
	open    map[int64]int64 // producer id -> first offset of its open transaction; nil: not built
	aborted []abortedTxn    // by marker offset

	checkpointed int64 // scanned as of the last checkpoint
	dirty        bool  // the aborted list changed since

	// flushMu serialises checkpoint writes, which run outside mu so no
	// fetch waits for an fsync.
	flushMu sync.Mutex
}

// TxnIndexFile is the checkpoint's name in the partition directory.
const TxnIndexFile = "txn-index"

// TxnIndexCheckpoint is the checkpoint's content.
type TxnIndexCheckpoint struct {
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
// hw] and its last batch is in the log. Called with scanMu held; it reads
// the file and the log without mu and installs what it found under it.
func (x *TxnIndex) loadCheckpoint(log Log, dir string, start, hw int64) {
	b, err := os.ReadFile(filepath.Join(dir, TxnIndexFile))
	if err != nil || len(b) > 64<<20 {
		return
	}
	var c TxnIndexCheckpoint
	if json.Unmarshal(b, &c) != nil || c.Version != 1 || c.Scanned <= start || c.Scanned > hw || c.Last == nil || !lastBatchIs(log, *c.Last, c.Scanned) {
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
	aborted := make([]abortedTxn, 0, len(c.Aborted))
	for _, a := range c.Aborted {
		aborted = append(aborted, abortedTxn{pid: a[0], first: a[1], last: a[2]})
	}
	x.mu.Lock()
	x.open, x.scanned, x.checkpointed, x.last = open, c.Scanned, c.Scanned, *c.Last
	x.aborted = aborted
	x.mu.Unlock()
}

// FlushCheckpoint writes the checkpoint when it is due: an abort was
// learnt or a million offsets scanned since the last. A failed write only
// means a longer scan after a restart.
func (x *TxnIndex) FlushCheckpoint(dir string) {
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
	err := atomicfile.Write(filepath.Join(dir, TxnIndexFile), b, 0o644)
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
func (x *TxnIndex) checkpointLocked() ([]byte, int64, bool) {
	if x.open == nil || x.scanned == x.checkpointed || !(x.dirty || x.scanned-x.checkpointed >= 1_000_000) {
		return nil, 0, false
	}
	if x.last[0] < 0 {
		return nil, 0, false // nothing scanned: nothing to resume
	}
	last := x.last
	c := TxnIndexCheckpoint{Version: 1, Scanned: x.scanned, Last: &last, Open: make(map[string]int64, len(x.open)), Aborted: make([][3]int64, 0, len(x.aborted))}
	for pid, first := range x.open {
		c.Open[strconv.FormatInt(pid, 10)] = first
	}
	for _, a := range x.aborted {
		c.Aborted = append(c.Aborted, [3]int64{a.pid, a.first, a.last})
	}
	b, _ := json.Marshal(c)
	return b, x.scanned, true
}

// lastBatchIs reports whether the batch ending at scanned-1 in log is
// the one last identifies (base offset, leader epoch, CRC).
func lastBatchIs(log Log, last [3]int64, scanned int64) bool {
	s, err := log.Read(last[0], 1)
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

// scanHook, when set (tests), runs before each read of a scan.
var scanHook atomic.Pointer[func()]

// SetScanHook makes f run before each read of every TxnIndex's scan (nil:
// nothing), for tests that change the log while a scan runs.
func SetScanHook(f func()) {
	if f == nil {
		scanHook.Store(nil)
		return
	}
	scanHook.Store(&f)
}

type abortedTxn struct {
	pid         int64
	first, last int64 // last: the abort marker's offset
}

// Refresh brings the index up to the high watermark, unless another
// request is scanning already: then the caller goes on with what that scan
// has published, rather than wait seconds behind it.
func (x *TxnIndex) Refresh(log Log, dir string) error {
	if !x.scanMu.TryLock() {
		return nil
	}
	defer x.scanMu.Unlock()
	return x.update(log, dir)
}

// txnEvent is one transactional batch a scan found: a data batch (which
// may open its producer's transaction) or a marker (which ends it).
type txnEvent struct {
	pid, base      int64
	marker, commit bool
}

// update scans the committed log from where the index stopped. Called
// with scanMu held, not mu: the log is read without mu, and each chunk's
// findings are published under mu at once, so readers see every offset
// below scanned indexed.
func (x *TxnIndex) update(log Log, dir string) error {
	start, hw, end := log.LogStartOffset(), log.HighWatermark(), log.LogEndOffset()
	if !x.triedFile {
		x.triedFile = true
		x.mu.Lock()
		built := x.open != nil
		x.mu.Unlock()
		if !built {
			x.loadCheckpoint(log, dir, start, hw)
		}
	}
	x.mu.Lock()
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
	scanned := x.scanned // only the scanner moves it
	x.mu.Unlock()

	restarts := 0
	var events []txnEvent
	for scanned < hw {
		if hook := scanHook.Load(); hook != nil {
			(*hook)()
		}
		s, err := log.Read(scanned, 1<<20)
		if errors.Is(err, partition.ErrOffsetOutOfRange) {
			// Retention (or DeleteRecords) moved the log start past
			// the scan: what is open is known only from the new start
			// on (a marker may have gone with the rest), so scan from
			// there, a few times at most, rather than answer without
			// the open transactions.
			if start := log.LogStartOffset(); start > scanned && restarts < 3 {
				restarts++
				x.mu.Lock()
				clear(x.open)
				x.scanned = start
				x.last = [3]int64{-1, 0, 0}
				x.dirty = true
				x.mu.Unlock()
				scanned = start
				continue
			}
			return fmt.Errorf("scan transactions of %s: %w", dir, err)
		}
		if err != nil {
			return fmt.Errorf("scan transactions of %s: %w", dir, err)
		}
		events = events[:0]
		last, seen := [3]int64{}, false
		next, err := s.EachBatchHeader(scanned, func(f *os.File, pos int64, h partition.BatchHeader) error {
			if h.Transactional() && h.ProducerID >= 0 {
				ev, ok, err := readTxnEvent(f, pos, h)
				if err != nil {
					return err
				}
				if ok {
					events = append(events, ev)
				}
			}
			last, seen = [3]int64{h.BaseOffset, int64(h.PartitionLeaderEpoch), int64(h.CRC)}, true
			return nil
		})
		s.Release()
		// What the chunk read before an error is published with it: the
		// batches below next were all seen.
		x.mu.Lock()
		for _, ev := range events {
			x.note(ev)
		}
		if seen {
			x.last = last
		}
		advanced := next > scanned
		x.scanned = next
		x.mu.Unlock()
		scanned = next
		if err != nil {
			return fmt.Errorf("scan transactions of %s: %w", dir, err)
		}
		if !advanced {
			break
		}
	}
	return nil
}

// readTxnEvent reads what a transactional batch means for the index: the
// record of a marker is read from f; ok is false for a control batch that
// is no marker this code can read (it leaves the state as it is).
func readTxnEvent(f interface {
	ReadAt([]byte, int64) (int, error)
}, pos int64, h partition.BatchHeader) (txnEvent, bool, error) {
	ev := txnEvent{pid: h.ProducerID, base: h.BaseOffset}
	if !h.Control() {
		return ev, true, nil
	}
	b, err := readControlBatch(f, pos, h)
	if err != nil {
		return ev, false, err
	}
	commit, _, ok := parseMarker(b)
	ev.marker, ev.commit = true, commit
	return ev, ok, nil
}

// note applies one transactional batch (data or marker). Called with mu
// held.
func (x *TxnIndex) note(ev txnEvent) {
	if !ev.marker {
		if _, ok := x.open[ev.pid]; !ok {
			x.open[ev.pid] = ev.base
		}
		return
	}
	first, ok := x.open[ev.pid]
	delete(x.open, ev.pid)
	if !ev.commit && ok {
		x.aborted = append(x.aborted, abortedTxn{pid: ev.pid, first: first, last: ev.base})
		x.dirty = true
	}
}

// lso is the last stable offset: the first offset of the oldest open
// transaction, else the high watermark, as far as the index has scanned;
// the log start while nothing is indexed yet. Called with x.mu held.
func (x *TxnIndex) lso(hw, start int64) int64 {
	if x.open == nil {
		return min(hw, start)
	}
	out := min(hw, x.scanned)
	for _, first := range x.open {
		out = min(out, first)
	}
	return out
}

// abortedIn lists the aborted transactions that may hold records in
// [from, to): those whose marker is at or after from and whose first
// offset is below to, oldest first, as Kafka's collectAbortedTxns.
func (x *TxnIndex) abortedIn(from, to int64) []wire.FetchAborted {
	out := []wire.FetchAborted{}
	for i := x.abortedFrom(from); i < len(x.aborted); i++ {
		if a := x.aborted[i]; a.first < to {
			out = append(out, wire.FetchAborted{ProducerID: a.pid, FirstOffset: a.first})
		}
	}
	return out
}

// abortedFrom is the index of the first aborted transaction whose marker
// is at or after from. Called with x.mu held.
func (x *TxnIndex) abortedFrom(from int64) int {
	i, _ := slices.BinarySearchFunc(x.aborted, from, func(a abortedTxn, off int64) int { return cmp.Compare(a.last, off) })
	return i
}

// StableOffset is the last stable offset: the first offset of the oldest
// open transaction, else the high watermark hw, as far as the index has
// scanned; the log start start while nothing is indexed yet. It reads the
// log not at all: Refresh first brings the index up to date.
func (x *TxnIndex) StableOffset(hw, start int64) int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.lso(hw, start)
}

// AbortedBetween lists the aborted transactions that may hold records in
// [from, to) (abortedIn) as far as the index has scanned.
func (x *TxnIndex) AbortedBetween(from, to int64) []wire.FetchAborted {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.abortedIn(from, to)
}

// AbortedTxnsBetween is AbortedBetween with each transaction's abort
// marker offset, for a segment's upload to the store (node/tier).
func (x *TxnIndex) AbortedTxnsBetween(from, to int64) []AbortedTxn {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []AbortedTxn
	for _, a := range x.aborted[x.abortedFrom(from):] {
		if a.first < to {
			out = append(out, AbortedTxn{ProducerID: a.pid, FirstOffset: a.first, MarkerOffset: a.last})
		}
	}
	return out
}

// OpenSince is the first offset of the producer's open transaction, if
// the index knows one.
func (x *TxnIndex) OpenSince(pid int64) (int64, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	first, ok := x.open[pid]
	return first, ok
}

// AbortedTxn is one aborted transaction in the index: its producer, its
// first offset and its abort marker's offset.
type AbortedTxn struct {
	ProducerID, FirstOffset, MarkerOffset int64
}

// TxnIndexState is what an index holds at one moment (Snapshot).
type TxnIndexState struct {
	// Built: the index was built (from the log or a checkpoint); when
	// false the rest is empty.
	Built bool
	// Scanned: offsets below are indexed. Checkpointed: Scanned as of
	// the last checkpoint written or loaded (0: none).
	Scanned, Checkpointed int64
	// Open maps each producer with an open transaction to its first
	// offset; Aborted is by marker offset.
	Open    map[int64]int64
	Aborted []AbortedTxn
}

// Snapshot copies the index's state, for tests and diagnostics.
func (x *TxnIndex) Snapshot() TxnIndexState {
	x.mu.Lock()
	defer x.mu.Unlock()
	st := TxnIndexState{Built: x.open != nil, Scanned: x.scanned, Checkpointed: x.checkpointed, Open: make(map[int64]int64, len(x.open)), Aborted: make([]AbortedTxn, 0, len(x.aborted))}
	for pid, first := range x.open {
		st.Open[pid] = first
	}
	for _, a := range x.aborted {
		st.Aborted = append(st.Aborted, AbortedTxn{ProducerID: a.pid, FirstOffset: a.first, MarkerOffset: a.last})
	}
	return st
}

// Forget drops what the index learnt, as after a restart without a
// checkpoint: the next Refresh scans from the log start (the checkpoint is
// not looked for again). For benchmarks of that scan.
func (x *TxnIndex) Forget() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.open = nil
}
