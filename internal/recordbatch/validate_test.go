package recordbatch

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The encoder must produce what a real Kafka client library parses.
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
	if err := Validate(b); err != nil {
		t.Fatal(err)
	}
}

func TestParseHeader(t *testing.T) {
	b := makeBatch(77, []byte("x"), []byte("y"))
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Magic != 2 || h.NumRecords != 2 || h.LastOffsetDelta != 1 || h.FirstTimestamp != 77 || h.MaxTimestamp != 78 ||
		h.Size() != int64(len(b)) || h.ProducerID != -1 || h.PartitionLeaderEpoch != -1 || h.CRC != CRC(b) {
		t.Fatalf("header %+v", h)
	}
	if _, err := ParseHeader(b[:HeaderSize-1]); err == nil {
		t.Fatal("short header parsed")
	}
}

func TestValidateRefusals(t *testing.T) {
	good := makeBatch(1, []byte("hello"), []byte("world"))
	withCRC := func(b []byte) []byte {
		SetCRC(b)
		return b
	}
	cases := []struct {
		name string
		b    []byte
		kind ErrorKind
		at   int
	}{
		{"empty", nil, Invalid, 0},
		{"short header", good[:40], Corrupt, 0},
		{"truncated body", good[:len(good)-1], Corrupt, OffLength},
		{"length too small", func() []byte {
			b := append([]byte(nil), good...)
			binary.BigEndian.PutUint32(b[OffLength:], 10)
			return b
		}(), Corrupt, OffLength},
		{"bad crc", func() []byte { b := append([]byte(nil), good...); b[len(b)-1] ^= 1; return b }(), Corrupt, OffCRC},
		{"magic 1", func() []byte { b := append([]byte(nil), good...); b[OffMagic] = 1; return b }(), Invalid, OffMagic},
		{"count mismatch", func() []byte {
			b := append([]byte(nil), good...)
			binary.BigEndian.PutUint32(b[OffLastOffsetDelta:], 5)
			return withCRC(b)
		}(), Invalid, OffNumRecords},
		{"zero records", makeBatchRaw(0, 1, 1, 0, nil), Invalid, OffNumRecords},
		{"unknown codec", makeBatchRaw(7, 1, 1, 1, []byte{1, 2, 3}), Invalid, OffAttributes},
		{"record overruns", makeBatchRaw(0, 1, 1, 1, []byte{0x7e, 0, 0}), Invalid, HeaderSize},
		{"trailing bytes", makeBatchRaw(0, 1, 1, 1, append(encodeRecords([]testRecord{{value: []byte("v")}}), 0)), Invalid, 0},
		{"fewer records than count", makeBatchRaw(0, 1, 1, 2, encodeRecords([]testRecord{{value: []byte("v")}})), Invalid, 0},
		{"second batch bad", append(append([]byte(nil), good...), good[:len(good)-3]...), Corrupt, len(good) + OffLength},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Validate(c.b)
			var be *Error
			if !errors.As(err, &be) {
				t.Fatalf("got %v, want an *Error", err)
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
	if err := Validate(makeBatchRaw(CompressionZstd, 1, 1, 3, []byte("opaque"))); err != nil {
		t.Fatal(err)
	}
	if err := Validate(append(append([]byte(nil), good...), good...)); err != nil {
		t.Fatal(err)
	}
}

// TestCheckCleaned: a cleaned batch may hold fewer records than its offset
// range, and only Check(cleaned) accepts it.
func TestCheckCleaned(t *testing.T) {
	payload := AppendRecord(nil, Record{OffsetDelta: 3, Key: []byte("k"), Value: []byte("v")})
	b := makeBatchRaw(0, 1, 1, 1, payload)
	binary.BigEndian.PutUint32(b[OffLastOffsetDelta:], 4)
	SetCRC(b)
	if _, err := Check(b, false); err == nil || err.Kind != Invalid {
		t.Fatalf("uncleaned check: %v", err)
	}
	if h, err := Check(b, true); err != nil || h.LastOffsetDelta != 4 {
		t.Fatalf("cleaned check: %+v, %v", h, err)
	}
}

func FuzzValidateBatches(f *testing.F) {
	f.Add(makeBatch(1, []byte("a")))
	f.Add(append(makeBatch(1, []byte("a"), nil), makeBatch(5, []byte("bcd"))...))
	f.Add(makeBatchRaw(CompressionLZ4, 1, 2, 2, []byte("xx")))
	recs := encodeRecords([]testRecord{{key: []byte("k"), value: []byte("v"), headers: []RecordHeader{{Key: []byte("h"), Value: []byte("v")}}}})
	f.Add(makeBatchRaw(0, 1, 1, 1, recs))
	f.Fuzz(func(t *testing.T, b []byte) {
		err := Validate(b)
		var be *Error
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
		if _, err := Scan(b, func(pos int, h Header) {
			if pos != total || CRC(b[pos:pos+int(h.Size())]) != h.CRC || h.NumRecords < 1 {
				t.Fatalf("accepted batch at %d is not whole or not intact", pos)
			}
			total += int(h.Size())
		}); err != nil || total != len(b) {
			t.Fatalf("accepted %d of %d bytes: %v", total, len(b), err)
		}
	})
}
