package partition

import (
	"os"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/recordbatch"
)

// testRecord is one record for makeBatch.
type testRecord struct {
	key, value []byte
	tsDelta    int64
	headers    [][2][]byte
}

// encodeRecords encodes recs as a batch's records, offset deltas 0, 1, ...
func encodeRecords(recs []testRecord) []byte {
	var out []byte
	for i, r := range recs {
		hs := make([]recordbatch.RecordHeader, len(r.headers))
		for j, h := range r.headers {
			hs[j] = recordbatch.RecordHeader{Key: h[0], Value: h[1]}
		}
		out = recordbatch.AppendRecord(out, recordbatch.Record{
			TimestampDelta: r.tsDelta, OffsetDelta: int64(i), Key: r.key, Value: r.value,
			Headers: recordbatch.AppendHeaders(nil, hs),
		})
	}
	return out
}

// makeBatchRaw builds a RecordBatch v2 with no producer around an already
// encoded payload, claiming count records.
func makeBatchRaw(attrs int16, firstTS, maxTS int64, count int32, payload []byte) []byte {
	h := recordbatch.NoProducer()
	h.Attributes, h.LastOffsetDelta, h.NumRecords = attrs, count-1, count
	h.FirstTimestamp, h.MaxTimestamp = firstTS, maxTS
	return recordbatch.AppendHeader(nil, h, payload)
}

// makeBatch builds an uncompressed batch of records with values, timestamps
// firstTS, firstTS+1, ...
func makeBatch(firstTS int64, values ...[]byte) []byte {
	recs := make([]testRecord, len(values))
	for i, v := range values {
		recs[i] = testRecord{key: []byte("k"), value: v, tsDelta: int64(i)}
	}
	return makeBatchRaw(0, firstTS, firstTS+int64(len(values))-1, int32(len(values)), encodeRecords(recs))
}

// sizedBatch builds a batch of n records of recSize-byte values.
func sizedBatch(firstTS int64, n, recSize int) []byte {
	vals := make([][]byte, n)
	for i := range vals {
		v := make([]byte, recSize)
		for j := range v {
			v[j] = byte(i + j)
		}
		vals[i] = v
	}
	return makeBatch(firstTS, vals...)
}

// fakeClock is an injectable Config.Clock.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time          { return c.now }
func (c *fakeClock) Advance(d time.Duration) { c.now = c.now.Add(d) }

func testConfig() Config {
	c := DefaultConfig()
	c.IndexIntervalBytes = 256
	return c
}

func openLog(t testing.TB, dir string, cfg Config) *Log {
	t.Helper()
	l, err := Open(dir, cfg)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	return l
}

func mustAppend(t testing.TB, l *Log, b []byte, epoch int32) AppendInfo {
	t.Helper()
	info, err := l.Append(b, epoch)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return info
}

// readAll returns the bytes of a Slice by reading its regions.
func readAll(t testing.TB, s *Slice) []byte {
	t.Helper()
	var out []byte
	for _, r := range s.Regions {
		b := make([]byte, r.Length)
		if _, err := r.File.ReadAt(b, r.Position); err != nil {
			t.Fatalf("read region %s@%d+%d: %v", r.File.Name(), r.Position, r.Length, err)
		}
		out = append(out, b...)
	}
	return out
}

// batchesIn splits concatenated batches into headers.
func batchesIn(t testing.TB, b []byte) []BatchHeader {
	t.Helper()
	var hs []BatchHeader
	if _, err := recordbatch.Scan(b, func(_ int, h BatchHeader) { hs = append(hs, h) }); err != nil && len(b) > 0 {
		t.Fatalf("read back batches: %v", err)
	}
	return hs
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
