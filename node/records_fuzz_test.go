package node

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/internal/recordbatch/compression"
	"github.com/spool-log/spool/partition"
)

// TestProduceShortXerialToCompactedTopic is the path to the panic:
// a compacted topic checks every batch's keys, so it decompresses a snappy
// batch on produce. A batch whose records are a cut xerial header gets an
// error code for its partition, and the connection keeps serving.
func TestProduceShortXerialToCompactedTopic(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	createTopic(t, adm, "table", 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")})
	cl := newClient(t, n)

	magic := compression.XerialMagic
	for extra := 0; extra < 16-len(magic); extra++ {
		b := rawBatch(-1, -1, -1, 1000, "v")[:recordbatch.HeaderSize]
		b = append(b, magic...)
		b = append(b, make([]byte, extra)...)
		binary.BigEndian.PutUint32(b[recordbatch.OffLength:], uint32(len(b)-recordbatch.LengthOverhead))
		binary.BigEndian.PutUint16(b[recordbatch.OffAttributes:], uint16(recordbatch.CompressionSnappy))
		rawBatchFix(b)
		got := produceRaw(t, cl, "table", b)
		if got.ErrorCode != kerr.CorruptMessage.Code && got.ErrorCode != kerr.InvalidRecord.Code {
			t.Fatalf("%d-byte xerial payload: error code %d, want CORRUPT_MESSAGE or INVALID_RECORD", len(magic)+extra, got.ErrorCode)
		}
	}
	// The same connection still appends a good batch.
	createTopic(t, adm, "plain", 1, nil)
	if got := produceRaw(t, cl, "plain", rawBatch(-1, -1, -1, 1000, "k")); got.ErrorCode != 0 {
		t.Fatalf("good batch after the bad ones: error %d", got.ErrorCode)
	}
}

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
