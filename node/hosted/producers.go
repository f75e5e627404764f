package hosted

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/partition"
)

// ProducerWindow is how many recent batches per producer are remembered for
// duplicate detection, as in Kafka: an idempotent producer has at most five
// requests in flight per partition.
const ProducerWindow = 5

// RebuildOffsets bounds how far back from the high watermark the producer
// state is rebuilt (Rebuild). Only the last five batches of each producer
// matter, and only producers that are still retrying; scanning further
// would make opening a large partition slow.
const RebuildOffsets = 100_000

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
	batches    []batchMeta // oldest first, at most ProducerWindow
	lastAppend time.Time
}

// Producers is one partition's idempotence state: for each producer id,
// its epoch and the sequence numbers of its last few batches. It is rebuilt
// from the tail of the log when the partition opens (Rebuild), so a restart
// does not turn a retried batch into a duplicate.
//
// Producers has no lock of its own: callers hold the partition's append
// lock (node's localPartition.appendMu) around every method, the same lock
// that gives a batch its place in the log's order, so that the check and
// the record of a batch are one step.
type Producers struct {
	m map[int64]*producerEntry
}

// NewProducers returns an empty producer state.
func NewProducers() *Producers {
	return &Producers{m: make(map[int64]*producerEntry)}
}

func seqAdd(seq int32, delta int32) int32 {
	if seq > math.MaxInt32-delta {
		return delta - (math.MaxInt32 - seq) - 1
	}
	return seq + delta
}

// Check decides what to do with a batch before it is appended: append it
// (ok), answer as for the same batch before (dup: at dupOffset, or once
// dupPending is appended if it still is on its way), or refuse it with a
// Kafka error.
func (ps *Producers) Check(h partition.BatchHeader) (dupOffset int64, dupPending *replica.Pending, dup bool, err *kerr.Error) {
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

// Record notes a batch that was appended at baseOffset.
func (ps *Producers) Record(h partition.BatchHeader, baseOffset int64, now time.Time) {
	ps.recordBatch(h, baseOffset, nil, now)
}

// RecordPending notes a batch proposed, whose offsets pending will tell
// (Settle).
func (ps *Producers) RecordPending(h partition.BatchHeader, pending *replica.Pending, now time.Time) {
	ps.recordBatch(h, -1, pending, now)
}

// Settle gives the batch proposed as pending the offsets it got.
func (ps *Producers) Settle(pid int64, pending *replica.Pending, info partition.AppendInfo) {
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

func (ps *Producers) recordBatch(h partition.BatchHeader, baseOffset int64, pending *replica.Pending, now time.Time) {
	if h.ProducerID < 0 {
		return
	}
	if h.Control() {
		// A transaction marker ends the transaction; sequence numbers
		// go on across it.
		ps.RecordMarker(h.ProducerID, h.ProducerEpoch, -1, now)
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
	if len(e.batches) > ProducerWindow {
		e.batches = append(e.batches[:0], e.batches[len(e.batches)-ProducerWindow:]...)
	}
	e.lastAppend = now
}

// RecordMarker notes a transaction marker of the producer at epoch: its
// transaction is over, and an epoch bumped by the coordinator (a timed-out
// or re-initialised producer) fences the older one. coordEpoch is the
// marker's coordinator epoch (-1 when unknown).
func (ps *Producers) RecordMarker(pid int64, epoch int16, coordEpoch int32, now time.Time) {
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

// MarkerFenced reports whether a marker of pid at producer epoch epoch
// from a coordinator in coordEpoch is superseded here: the partition knows
// a newer producer epoch, or a marker from a newer coordinator.
func (ps *Producers) MarkerFenced(pid int64, epoch int16, coordEpoch int32) (epochOld, coordOld bool) {
	e, ok := ps.m[pid]
	if !ok {
		return false, false
	}
	return e.epoch > epoch, e.coordEpoch > coordEpoch
}

// TxnView is what a transactional batch's check needs of its producer:
// whether its transaction is open here at epoch, and its marker count.
func (ps *Producers) TxnView(pid int64, epoch int16) (open bool, markers uint64) {
	e, ok := ps.m[pid]
	if !ok {
		return false, 0
	}
	return e.txnOpen && e.epoch == epoch, e.markers
}

// Expire forgets producers idle since before cutoff, as Kafka does after
// producer.id.expiration.ms, so the map does not grow without bound. It
// returns how many it forgot.
func (ps *Producers) Expire(cutoff time.Time) int {
	n := 0
	for id, e := range ps.m {
		if e.lastAppend.Before(cutoff) {
			delete(ps.m, id)
			n++
		}
	}
	return n
}

// Describe lists the producers with state, by id, as DescribeProducers
// answers them: LastTimestamp is when the state last noted a batch of the
// producer (at a rebuild, its time), CoordinatorEpoch -1 and
// CurrentTxnStartOffset left for the caller (TxnIndex.OpenSince).
func (ps *Producers) Describe() []kmsg.DescribeProducersResponseTopicPartitionActiveProducer {
	out := make([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, 0, len(ps.m))
	for id, e := range ps.m {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID = id
		ap.ProducerEpoch = int32(e.epoch)
		if len(e.batches) > 0 {
			ap.LastSequence = e.batches[len(e.batches)-1].lastSeq
		}
		ap.LastTimestamp = e.lastAppend.UnixMilli()
		ap.CoordinatorEpoch = -1
		out = append(out, ap)
	}
	slices.SortFunc(out, func(a, b kmsg.DescribeProducersResponseTopicPartitionActiveProducer) int {
		switch {
		case a.ProducerID < b.ProducerID:
			return -1
		case a.ProducerID > b.ProducerID:
			return 1
		}
		return 0
	})
	return out
}

// PendingBatches counts the batches recorded as pending (RecordPending)
// and not settled yet, over all producers: for tests that watch batches
// on their way into the log.
func (ps *Producers) PendingBatches() int {
	n := 0
	for _, e := range ps.m {
		for _, b := range e.batches {
			if b.pending != nil {
				n++
			}
		}
	}
	return n
}

// Rebuild reads the batch headers of the committed log's tail (the last
// RebuildOffsets offsets below the high watermark; headers only, 61 bytes
// per batch, and the record of each marker) and replays them into the
// producer state, noting each at now. A log start that retention moves
// meanwhile ends the rebuild early, without error: nothing older matters.
func (ps *Producers) Rebuild(log Log, now time.Time) error { return ps.RebuildIn(log, "", now) }

// RebuildIn is Rebuild for the partition in dir: when the state as of an
// offset the log holds is kept there (ProducerSeedFile: the last uploaded
// segment's, or a restore's) within RebuildOffsets of the high watermark,
// the rebuild starts from that state and replays the log from there.
func (ps *Producers) RebuildIn(log Log, dir string, now time.Time) error {
	seed, from := seeded(log, dir)
	ps.m = seed.m
	return ps.replay(log, from, log.HighWatermark(), now)
}

// errReplayed stops a replay's walk at its end.
var errReplayed = errors.New("replayed to the end")

// replay applies the log's batches that start in [from, to) to the
// producer state, noting each at now.
func (ps *Producers) replay(log Log, from, to int64, now time.Time) error {
	off := from
	for off < to {
		s, err := log.Read(off, 1<<20)
		if errors.Is(err, partition.ErrOffsetOutOfRange) {
			return nil // retention moved the start; nothing older matters
		}
		if err != nil {
			return fmt.Errorf("read producer state: %w", err)
		}
		next, err := s.EachBatchHeader(off, func(f *os.File, pos int64, h partition.BatchHeader) error {
			if h.BaseOffset >= to {
				return errReplayed
			}
			if !h.Control() || h.ProducerID < 0 {
				ps.Record(h, h.BaseOffset, now)
				return nil
			}
			// A marker: its coordinator epoch is in its record.
			b, err := readControlBatch(f, pos, h)
			if err != nil {
				return err
			}
			_, coordEpoch, _ := parseMarker(b)
			ps.RecordMarker(h.ProducerID, h.ProducerEpoch, coordEpoch, now)
			return nil
		})
		s.Release()
		if errors.Is(err, errReplayed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("producer state: %w", err)
		}
		if next == off {
			return nil
		}
		off = next
	}
	return nil
}
