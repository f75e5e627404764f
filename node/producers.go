package node

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/spool-log/spool/internal/atomicfile"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/partition"
)

// producerWindow is how many recent batches per producer are remembered for
// duplicate detection, as in Kafka: an idempotent producer has at most five
// requests in flight per partition.
const producerWindow = 5

type batchMeta struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
	// pending is set while the batch is proposed and not yet in the
	// leader's log: its offsets are not known, and a retry of it waits for
	// them (replica.Pending.Appended) outside the partition's append lock.
	pending *replica.Pending
}

type producerEntry struct {
	epoch int16
	// txnOpen: a transactional batch of the producer was appended and no
	// marker since (the leader's view, its own proposals included).
	txnOpen bool
	// markers counts the producer's markers here, so a verified
	// transactional batch can tell its transaction ended meanwhile.
	markers uint64
	// coordEpoch is the highest coordinator epoch of the producer's
	// markers here (-1: none seen), as Kafka's ProducerStateEntry keeps
	// it: a marker from an older coordinator (one deposed while holding
	// a Prepare state) is refused, or it could close the producer's next
	// transaction. Rebuilt from the markers in the log, so every replica
	// agrees.
	coordEpoch int32
	batches    []batchMeta // oldest first, at most producerWindow
	lastAppend time.Time
}

// producerStates is one partition's idempotence state: for each producer id,
// its epoch and the sequence numbers of its last few batches. It is rebuilt
// from the tail of the log when the partition opens, so a restart does not
// turn a retried batch into a duplicate. Callers hold the partition's append
// lock.
type producerStates struct {
	m map[int64]*producerEntry
}

func newProducerStates() *producerStates {
	return &producerStates{m: make(map[int64]*producerEntry)}
}

func seqAdd(seq int32, delta int32) int32 {
	if seq > math.MaxInt32-delta {
		return delta - (math.MaxInt32 - seq) - 1
	}
	return seq + delta
}

// check decides what to do with a batch before it is appended: append it
// (ok), answer as for the same batch before (dup: at dupOffset, or once
// dupPending is appended if it still is on its way), or refuse it with a
// Kafka error.
func (ps *producerStates) check(h partition.BatchHeader) (dupOffset int64, dupPending *replica.Pending, dup bool, err *kerr.Error) {
	if h.ProducerID < 0 {
		return 0, nil, false, nil
	}
	e, ok := ps.m[h.ProducerID]
	if !ok || len(e.batches) == 0 {
		// Kafka 2.5+ (KIP-360) accepts any first sequence from a producer
		// it has no state for: the state may have expired or been lost
		// with retention.
		return 0, nil, false, nil
	}
	switch {
	case h.ProducerEpoch < e.epoch:
		return 0, nil, false, kerr.InvalidProducerEpoch
	case h.ProducerEpoch > e.epoch:
		if h.BaseSequence != 0 {
			return 0, nil, false, kerr.OutOfOrderSequenceNumber
		}
		return 0, nil, false, nil
	}
	last := seqAdd(h.BaseSequence, h.LastOffsetDelta)
	for _, b := range e.batches {
		if b.firstSeq == h.BaseSequence && b.lastSeq == last {
			return b.firstOffset, b.pending, true, nil
		}
	}
	if want := seqAdd(e.batches[len(e.batches)-1].lastSeq, 1); h.BaseSequence != want {
		return 0, nil, false, kerr.OutOfOrderSequenceNumber
	}
	return 0, nil, false, nil
}

// record notes a batch that was appended at baseOffset.
func (ps *producerStates) record(h partition.BatchHeader, baseOffset int64, now time.Time) {
	ps.recordBatch(h, baseOffset, nil, now)
}

// recordPending notes a batch proposed, whose offsets pending will tell
// (settle).
func (ps *producerStates) recordPending(h partition.BatchHeader, pending *replica.Pending, now time.Time) {
	ps.recordBatch(h, -1, pending, now)
}

// settle gives the batch proposed as pending the offsets it got.
func (ps *producerStates) settle(pid int64, pending *replica.Pending, info partition.AppendInfo) {
	e, ok := ps.m[pid]
	if !ok {
		return
	}
	for i := range e.batches {
		if b := &e.batches[i]; b.pending == pending {
			b.firstOffset, b.lastOffset = info.BaseOffset, info.LastOffset
			b.pending = nil
		}
	}
}

func (ps *producerStates) recordBatch(h partition.BatchHeader, baseOffset int64, pending *replica.Pending, now time.Time) {
	if h.ProducerID < 0 {
		return
	}
	if h.Control() {
		// A transaction marker ends the transaction; sequence numbers
		// go on across it.
		ps.recordMarker(h.ProducerID, h.ProducerEpoch, -1, now)
		return
	}
	e, ok := ps.m[h.ProducerID]
	if !ok {
		e = &producerEntry{epoch: h.ProducerEpoch, coordEpoch: -1}
		ps.m[h.ProducerID] = e
	}
	if h.ProducerEpoch != e.epoch {
		e.epoch = h.ProducerEpoch
		e.batches = e.batches[:0]
	}
	e.txnOpen = h.Transactional()
	e.batches = append(e.batches, batchMeta{
		firstSeq:    h.BaseSequence,
		lastSeq:     seqAdd(h.BaseSequence, h.LastOffsetDelta),
		firstOffset: baseOffset,
		lastOffset:  baseOffset + int64(h.LastOffsetDelta),
		pending:     pending,
	})
	if len(e.batches) > producerWindow {
		e.batches = append(e.batches[:0], e.batches[len(e.batches)-producerWindow:]...)
	}
	e.lastAppend = now
}

// recordMarker notes a transaction marker of the producer at epoch: its
// transaction is over, and an epoch bumped by the coordinator (a timed-out
// or re-initialised producer) fences the older one. coordEpoch is the
// marker's coordinator epoch (-1 when unknown).
func (ps *producerStates) recordMarker(pid int64, epoch int16, coordEpoch int32, now time.Time) {
	e, ok := ps.m[pid]
	if !ok {
		e = &producerEntry{epoch: epoch, coordEpoch: -1}
		ps.m[pid] = e
	}
	e.coordEpoch = max(e.coordEpoch, coordEpoch)
	if epoch > e.epoch {
		e.epoch = epoch
		e.batches = e.batches[:0]
	}
	e.txnOpen = false
	e.markers++
	e.lastAppend = now
}

// markerFenced reports whether a marker of pid at producer epoch epoch
// from a coordinator in coordEpoch is superseded here: the partition knows
// a newer producer epoch, or a marker from a newer coordinator.
func (ps *producerStates) markerFenced(pid int64, epoch int16, coordEpoch int32) (epochOld, coordOld bool) {
	e, ok := ps.m[pid]
	if !ok {
		return false, false
	}
	return e.epoch > epoch, e.coordEpoch > coordEpoch
}

// txnView is what a transactional batch's check needs of its producer:
// whether its transaction is open here at epoch, and its marker count.
func (ps *producerStates) txnView(pid int64, epoch int16) (open bool, markers uint64) {
	e, ok := ps.m[pid]
	if !ok {
		return false, 0
	}
	return e.txnOpen && e.epoch == epoch, e.markers
}

// expire forgets producers idle since before cutoff, as Kafka does after
// producer.id.expiration.ms, so the map does not grow without bound.
func (ps *producerStates) expire(cutoff time.Time) int {
	n := 0
	for id, e := range ps.m {
		if e.lastAppend.Before(cutoff) {
			delete(ps.m, id)
			n++
		}
	}
	return n
}

// producerIDBlock is how many producer ids are reserved on disk at a time:
// the file is rewritten once per block, and a crash skips at most one
// block's unused ids, never reuses one.
const producerIDBlock = 1000

// producerIDs hands out producer ids: the node id in the high 32 bits and a
// counter persisted in DataDir/producer-ids in the low 32, so ids never
// repeat across restarts or across nodes.
type producerIDs struct {
	mu     sync.Mutex
	path   string
	nodeID int32
	next   int64 // next counter value to hand out
	limit  int64 // counter values below limit are reserved on disk
}

func openProducerIDs(path string, nodeID int32) (*producerIDs, error) {
	p := &producerIDs{path: path, nodeID: nodeID}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", path, err)
	default:
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("parse %s: %q is not a counter", path, b)
		}
		p.next, p.limit = n, n
	}
	return p, nil
}

func (p *producerIDs) allocate() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next >= p.limit {
		limit := p.next + producerIDBlock
		if limit > math.MaxUint32 {
			return 0, fmt.Errorf("producer id counter of node %d exhausted", p.nodeID)
		}
		if err := atomicfile.Write(p.path, []byte(strconv.FormatInt(limit, 10)+"\n"), 0o600); err != nil {
			return 0, fmt.Errorf("reserve producer ids: %w", err)
		}
		p.limit = limit
	}
	id := int64(p.nodeID)<<32 | p.next
	p.next++
	return id, nil
}
