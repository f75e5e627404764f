package hosted

import (
	"encoding/binary"
	"fmt"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/partition"
)

// MarkerBatch is a transaction marker: a control batch of producer pid at
// epoch, transactional, holding one control record (key: version 0, type
// 0 abort or 1 commit; value: version 0, coordinator epoch), as Kafka
// writes it, timestamped ts (Unix milliseconds).
func MarkerBatch(pid int64, epoch int16, commit bool, coordEpoch int32, ts int64) []byte {
	typ := byte(0)
	if commit {
		typ = 1
	}
	key := []byte{0, 0, 0, typ}
	value := []byte{0, 0, byte(coordEpoch >> 24), byte(coordEpoch >> 16), byte(coordEpoch >> 8), byte(coordEpoch)}
	h := recordbatch.NoProducer()
	h.ProducerID, h.ProducerEpoch = pid, epoch
	h.Attributes = recordbatch.AttrControl | recordbatch.AttrTransactional
	h.FirstTimestamp, h.MaxTimestamp = ts, ts
	b, err := recordbatch.Build(nil, h, []recordbatch.Record{{Key: key, Value: value}}, nil)
	if err != nil {
		panic(err) // uncompressed: cannot fail
	}
	return b
}

// readControlBatch reads the whole control batch h at pos (small: a
// marker is one record).
func readControlBatch(f interface {
	ReadAt([]byte, int64) (int, error)
}, pos int64, h partition.BatchHeader) ([]byte, error) {
	if h.Size() > 1<<16 {
		return nil, fmt.Errorf("control batch of %d bytes at offset %d", h.Size(), h.BaseOffset)
	}
	b := make([]byte, h.Size())
	if _, err := f.ReadAt(b, pos); err != nil {
		return nil, fmt.Errorf("read control batch at offset %d: %w", h.BaseOffset, err)
	}
	return b, nil
}

// parseMarker reads a control batch's transaction marker: commit or
// abort, and the coordinator epoch (-1 if the value is missing). ok is
// false when it is no marker this code can read.
func parseMarker(batch []byte) (commit bool, coordEpoch int32, ok bool) {
	rh, err := recordbatch.ParseHeader(batch)
	if err != nil {
		return false, -1, false
	}
	recs, err := recordbatch.ParseRecords(nil, batch[recordbatch.HeaderSize:], rh.NumRecords, rh.LastOffsetDelta)
	if err != nil || len(recs) == 0 || len(recs[0].Key) < 4 || recs[0].Key[2] != 0 || recs[0].Key[3] > 1 {
		return false, -1, false
	}
	coordEpoch = -1
	if v := recs[0].Value; len(v) >= 6 {
		coordEpoch = int32(binary.BigEndian.Uint32(v[2:6]))
	}
	return recs[0].Key[3] == 1, coordEpoch, true
}
