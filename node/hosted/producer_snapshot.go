package hosted

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/spool-log/spool/internal/atomicfile"
)

// A producer snapshot is the idempotence state of a partition as of one
// offset (End): for each producer its epoch, its coordinator epoch and
// its last few batches, as Rebuild would find them replaying the log up
// to End. Tiered storage uploads one beside each segment (as of the
// segment's end, each built from the one before it and the segment's own
// batches, as Kafka keeps its .snapshot files), so a partition restored
// from the store — whose local log starts empty at the last segment's
// end — still recognises an idempotent producer's retry of a batch that is
// only in the store, rather than append it twice; and a replica whose
// local log keeps only the tail rebuilds from the last one (ProducerSeedFile)
// when it comes to lead.
//
// Layout, big-endian: "SPPS", a version byte (1), End (8), the producer
// count (4), then per producer: id (8), epoch (2), coordinator epoch (4),
// last append in Unix ms (8), flags (1: bit 0, its transaction is open),
// the batch count (1, at most ProducerWindow), and per batch its first and
// last sequence (4 each) and first and last offset (8 each).
const (
	producerSnapshotMagic   = "SPPS"
	producerSnapshotVersion = 1
	producerEntryBytes      = 8 + 2 + 4 + 8 + 1 + 1
	flagTxnOpen             = 1
	producerBatchBytes      = 4 + 4 + 8 + 8
	// maxProducerSnapshotBytes bounds a snapshot decoded (millions of
	// producers).
	maxProducerSnapshotBytes = 64 << 20
)

// ProducerSeedFile, in a partition's directory, is the producer snapshot
// of the partition's last uploaded segment (node/tier keeps it on every
// replica after each upload, and a restore takes it from the store): the
// state as of that segment's end, which a rebuild starts from when the
// log holds everything after it, so producers whose batches local
// retention deleted are still known.
const ProducerSeedFile = "producer-seed"

// ProducerSnapshot is a decoded producer snapshot.
type ProducerSnapshot struct {
	End       int64
	Producers *Producers
}

// EncodeSnapshot encodes ps as the state as of end. Batches still on their
// way into the log (pending) are left out: their offsets are not known.
func (ps *Producers) EncodeSnapshot(end int64) []byte {
	ids := make([]int64, 0, len(ps.m))
	for id := range ps.m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b := make([]byte, 0, len(producerSnapshotMagic)+1+8+4+len(ids)*(producerEntryBytes+2*producerBatchBytes))
	b = append(b, producerSnapshotMagic...)
	b = append(b, producerSnapshotVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(end))
	b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		e := ps.m[id]
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
		b = binary.BigEndian.AppendUint32(b, uint32(e.coordEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.lastAppend.UnixMilli()))
		var flags byte
		if e.txnOpen {
			flags |= flagTxnOpen
		}
		b = append(b, flags)
		var settled []batchMeta
		for _, bm := range e.batches {
			if bm.pending == nil {
				settled = append(settled, bm)
			}
		}
		b = append(b, byte(len(settled)))
		for _, bm := range settled {
			b = binary.BigEndian.AppendUint32(b, uint32(bm.firstSeq))
			b = binary.BigEndian.AppendUint32(b, uint32(bm.lastSeq))
			b = binary.BigEndian.AppendUint64(b, uint64(bm.firstOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(bm.lastOffset))
		}
	}
	return b
}

var errBadProducerSnapshot = errors.New("bad producer snapshot")

// DecodeProducerSnapshot decodes a snapshot; anything malformed is an
// error, never a panic (the bytes come from the store).
func DecodeProducerSnapshot(b []byte) (ProducerSnapshot, error) {
	bad := func(format string, args ...any) (ProducerSnapshot, error) {
		return ProducerSnapshot{}, fmt.Errorf("%w: "+format, append([]any{errBadProducerSnapshot}, args...)...)
	}
	if len(b) > maxProducerSnapshotBytes {
		return bad("%d bytes, more than %d", len(b), maxProducerSnapshotBytes)
	}
	head := len(producerSnapshotMagic) + 1 + 8 + 4
	if len(b) < head || string(b[:len(producerSnapshotMagic)]) != producerSnapshotMagic {
		return bad("no %s header", producerSnapshotMagic)
	}
	if v := b[len(producerSnapshotMagic)]; v != producerSnapshotVersion {
		return bad("version %d", v)
	}
	end := int64(binary.BigEndian.Uint64(b[len(producerSnapshotMagic)+1:]))
	n := int(binary.BigEndian.Uint32(b[head-4:]))
	if end < 0 {
		return bad("end %d", end)
	}
	b = b[head:]
	if n > len(b)/producerEntryBytes {
		return bad("%d producers in %d bytes", n, len(b))
	}
	ps := NewProducers()
	last := int64(-1) << 63
	for i := 0; i < n; i++ {
		if len(b) < producerEntryBytes {
			return bad("producer %d cut short", i)
		}
		id := int64(binary.BigEndian.Uint64(b))
		e := &producerEntry{
			epoch:      int16(binary.BigEndian.Uint16(b[8:])),
			coordEpoch: int32(binary.BigEndian.Uint32(b[10:])),
			lastAppend: time.UnixMilli(int64(binary.BigEndian.Uint64(b[14:]))),
		}
		flags, nb := b[22], int(b[23])
		b = b[producerEntryBytes:]
		if flags&^flagTxnOpen != 0 {
			return bad("producer %d: flags %#x", id, flags)
		}
		e.txnOpen = flags&flagTxnOpen != 0
		if id < 0 || id <= last {
			return bad("producer id %d after %d", id, last)
		}
		last = id
		if nb > ProducerWindow || len(b) < nb*producerBatchBytes {
			return bad("producer %d: %d batches in %d bytes", id, nb, len(b))
		}
		for j := 0; j < nb; j++ {
			bm := batchMeta{
				firstSeq:    int32(binary.BigEndian.Uint32(b)),
				lastSeq:     int32(binary.BigEndian.Uint32(b[4:])),
				firstOffset: int64(binary.BigEndian.Uint64(b[8:])),
				lastOffset:  int64(binary.BigEndian.Uint64(b[16:])),
			}
			b = b[producerBatchBytes:]
			if bm.firstOffset < 0 || bm.lastOffset < bm.firstOffset || bm.lastOffset >= end {
				return bad("producer %d: batch [%d, %d] not below the end %d", id, bm.firstOffset, bm.lastOffset, end)
			}
			e.batches = append(e.batches, bm)
		}
		ps.m[id] = e
	}
	if len(b) != 0 {
		return bad("%d bytes after the last producer", len(b))
	}
	return ProducerSnapshot{End: end, Producers: ps}, nil
}

// SnapshotAt is the producer snapshot of log as of next (at most its high
// watermark): prev (the snapshot as of an earlier offset, nil: none)
// replayed forward over the log's batches from prev's end when the log
// still holds them, else the log's batches in [max(start,
// next-RebuildOffsets), next) alone, as a rebuild would find them.
// Producers idle since before expireBefore are left out.
func SnapshotAt(log Log, prev []byte, next int64, now, expireBefore time.Time) ([]byte, error) {
	ps, from := NewProducers(), max(log.LogStartOffset(), next-RebuildOffsets)
	if prev != nil {
		if s, err := DecodeProducerSnapshot(prev); err == nil && s.End <= next && s.End >= log.LogStartOffset() {
			ps, from = s.Producers, s.End
		}
	}
	if err := ps.replay(log, from, next, now); err != nil {
		return nil, err
	}
	ps.Expire(expireBefore)
	return ps.EncodeSnapshot(next), nil
}

// seeded is the producer state a rebuild of log starts from: the
// restore's snapshot in dir (ProducerSeedFile) when the log holds every
// batch from its end to the high watermark and that is within
// RebuildOffsets, with the offset to replay from; else empty state and
// the rebuild's usual start.
func seeded(log Log, dir string) (*Producers, int64) {
	hw, start := log.HighWatermark(), log.LogStartOffset()
	from := max(start, hw-RebuildOffsets)
	if dir == "" {
		return NewProducers(), from
	}
	b, err := atomicfile.ReadBounded(filepath.Join(dir, ProducerSeedFile), maxProducerSnapshotBytes)
	if err != nil {
		return NewProducers(), from
	}
	s, err := DecodeProducerSnapshot(b)
	if err != nil || s.End < start || s.End > hw || hw-s.End > RebuildOffsets {
		return NewProducers(), from
	}
	return s.Producers, s.End
}

// WriteProducerSeed writes a restore's producer snapshot into the
// partition directory dir, durably, for the partition's rebuilds.
func WriteProducerSeed(dir string, snapshot []byte) error {
	if _, err := DecodeProducerSnapshot(snapshot); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, ProducerSeedFile), snapshot, 0o644)
}
