package partition

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The test encoder must produce what a real Kafka client library parses.
func TestEncoderMatchesKmsg(t *testing.T) {
	b := makeBatch(1000, []byte("a"), []byte("bb"), nil)
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatalf("kmsg cannot parse test batch: %v", err)
	}
	if rb.NumRecords != 3 || rb.LastOffsetDelta != 2 || rb.Magic != 2 || rb.MaxTimestamp != 1002 {
		t.Fatalf("kmsg sees %+v", rb)
	}
	rest := rb.Records
	for i := 0; i < 3; i++ {
		var r kmsg.Record
		l, n := binary.Varint(rest)
		if err := r.ReadFrom(rest[:n+int(l)]); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if r.OffsetDelta != int32(i) {
			t.Fatalf("record %d offset delta %d", i, r.OffsetDelta)
		}
		rest = rest[n+int(l):]
	}
	if len(rest) != 0 {
		t.Fatalf("%d bytes left", len(rest))
	}
	if err := ValidateBatches(b); err != nil {
		t.Fatal(err)
	}
}

func TestParseBatchHeader(t *testing.T) {
	b := makeBatch(77, []byte("x"), []byte("y"))
	h, err := ParseBatchHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Magic != 2 || h.NumRecords != 2 || h.LastOffsetDelta != 1 || h.FirstTimestamp != 77 || h.MaxTimestamp != 78 ||
		h.Size() != int64(len(b)) || h.ProducerID != -1 || h.PartitionLeaderEpoch != -1 || h.CRC != batchCRC(b) {
		t.Fatalf("header %+v", h)
	}
	if _, err := ParseBatchHeader(b[:BatchHeaderSize-1]); err == nil {
		t.Fatal("short header parsed")
	}
}

func TestValidateBatchesRefusals(t *testing.T) {
	good := makeBatch(1, []byte("hello"), []byte("world"))
	withCRC := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[offCRC:], batchCRC(b))
		return b
	}
	cases := []struct {
		name string
		b    []byte
		kind BatchErrorKind
		at   int
	}{
		{"empty", nil, Invalid, 0},
		{"short header", good[:40], Corrupt, 0},
		{"truncated body", good[:len(good)-1], Corrupt, offBatchLength},
		{"length too small", func() []byte {
			b := append([]byte(nil), good...)
			binary.BigEndian.PutUint32(b[offBatchLength:], 10)
			return b
		}(), Corrupt, offBatchLength},
		{"bad crc", func() []byte { b := append([]byte(nil), good...); b[len(b)-1] ^= 1; return b }(), Corrupt, offCRC},
		{"magic 1", func() []byte { b := append([]byte(nil), good...); b[offMagic] = 1; return b }(), Invalid, offMagic},
		{"count mismatch", func() []byte {
			b := append([]byte(nil), good...)
			binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 5)
			return withCRC(b)
		}(), Invalid, offNumRecords},
		{"zero records", makeBatchRaw(0, 1, 1, 0, nil), Invalid, offNumRecords},
		{"unknown codec", makeBatchRaw(7, 1, 1, 1, []byte{1, 2, 3}), Invalid, offAttributes},
		{"record overruns", makeBatchRaw(0, 1, 1, 1, []byte{0x7e, 0, 0}), Invalid, BatchHeaderSize},
		{"trailing bytes", makeBatchRaw(0, 1, 1, 1, append(encodeRecords([]testRecord{{value: []byte("v")}}), 0)), Invalid, 0},
		{"fewer records than count", makeBatchRaw(0, 1, 1, 2, encodeRecords([]testRecord{{value: []byte("v")}})), Invalid, 0},
		{"second batch bad", append(append([]byte(nil), good...), good[:len(good)-3]...), Corrupt, len(good) + offBatchLength},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateBatches(c.b)
			var be *BatchError
			if !errors.As(err, &be) {
				t.Fatalf("got %v, want a *BatchError", err)
			}
			if be.Kind != c.kind {
				t.Fatalf("kind %v, want %v (%v)", be.Kind, c.kind, err)
			}
			if c.at != 0 && be.Offset != c.at {
				t.Fatalf("offset %d, want %d (%v)", be.Offset, c.at, err)
			}
		})
	}
	// Compressed payloads are opaque: the header's count check stands.
	if err := ValidateBatches(makeBatchRaw(CompressionZstd, 1, 1, 3, []byte("opaque"))); err != nil {
		t.Fatal(err)
	}
	if err := ValidateBatches(append(append([]byte(nil), good...), good...)); err != nil {
		t.Fatal(err)
	}
}

func FuzzValidateBatches(f *testing.F) {
	f.Add(makeBatch(1, []byte("a")))
	f.Add(append(makeBatch(1, []byte("a"), nil), makeBatch(5, []byte("bcd"))...))
	f.Add(makeBatchRaw(CompressionLZ4, 1, 2, 2, []byte("xx")))
	recs := encodeRecords([]testRecord{{key: []byte("k"), value: []byte("v"), headers: [][2][]byte{{[]byte("h"), []byte("v")}}}})
	f.Add(makeBatchRaw(0, 1, 1, 1, recs))
	f.Fuzz(func(t *testing.T, b []byte) {
		err := ValidateBatches(b)
		var be *BatchError
		if err != nil && !errors.As(err, &be) {
			t.Fatalf("untyped error %v", err)
		}
		if err != nil {
			if be.Offset < 0 || be.Offset > len(b) {
				t.Fatalf("error offset %d outside %d bytes", be.Offset, len(b))
			}
			return
		}
		// Accepted input must be whole batches with good CRCs.
		total := 0
		if _, err := scanBatches(b, func(pos int, h BatchHeader) {
			if pos != total || batchCRC(b[pos:pos+int(h.Size())]) != h.CRC || h.NumRecords < 1 {
				t.Fatalf("accepted batch at %d is not whole or not intact", pos)
			}
			total += int(h.Size())
		}); err != nil || total != len(b) {
			t.Fatalf("accepted %d of %d bytes: %v", total, len(b), err)
		}
	})
}
