package hosted

import (
	"testing"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/internal/recordbatch/compression"
	"github.com/spool-log/spool/partition"
)

// FuzzFirstRecordAtOrAfter: the record walk ListOffsets by time does inside
// one batch takes any batch (compressed or not) without panicking.
func FuzzFirstRecordAtOrAfter(f *testing.F) {
	f.Add(rawBatch(-1, -1, -1, 1000, "a", "bb", "ccc"), int64(1000))
	f.Add(rawBatch(7, 0, 0, 5, "x"), int64(-1))
	for codec := recordbatch.CompressionGzip; codec <= recordbatch.CompressionZstd; codec++ {
		h := recordbatch.NoProducer()
		h.Attributes, h.LastOffsetDelta, h.FirstTimestamp, h.MaxTimestamp = int16(codec), 1, 1000, 1000
		b, err := recordbatch.Build(nil, h, []recordbatch.Record{{Value: []byte("x")}, {OffsetDelta: 1, Value: []byte("yy")}}, compression.Codecs{})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, int64(1000))
	}
	f.Fuzz(func(t *testing.T, batch []byte, ts int64) {
		if len(batch) < partition.BatchHeaderSize {
			return
		}
		h, err := partition.ParseBatchHeader(batch)
		if err != nil {
			return
		}
		off, got, err := firstRecordAtOrAfter(batch, h, ts)
		if err == nil && off >= 0 && got < ts {
			t.Fatalf("record at %d has timestamp %d < %d", off, got, ts)
		}
	})
}

// rawBatch is an uncompressed batch of values, each a record, all stamped
// ts (pid -1: no producer).
func rawBatch(pid int64, epoch int16, seq int32, ts int64, values ...string) []byte {
	h := recordbatch.NoProducer()
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = pid, epoch, seq
	h.FirstTimestamp, h.MaxTimestamp, h.LastOffsetDelta = ts, ts, int32(len(values)-1)
	recs := make([]recordbatch.Record, len(values))
	for i, v := range values {
		recs[i] = recordbatch.Record{OffsetDelta: int64(i), Value: []byte(v)}
	}
	b, err := recordbatch.Build(nil, h, recs, nil)
	if err != nil {
		panic(err) // uncompressed: cannot fail
	}
	return b
}
