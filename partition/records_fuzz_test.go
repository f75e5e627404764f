package partition

import (
	"testing"
)

// FuzzParseRecords: the record walk the cleaner and the compacted-topic key
// check use takes any payload and counts without panicking, and what it
// accepts, re-encoded by appendRecord (as the cleaner rewrites survivors),
// parses back to the same records.
func FuzzParseRecords(f *testing.F) {
	recs := []testRecord{
		{key: []byte("k"), value: []byte("v"), headers: [][2][]byte{{[]byte("h"), []byte("x")}}},
		{key: []byte("k2"), value: nil, tsDelta: 5},
		{key: []byte{}, value: []byte{}},
	}
	f.Add(encodeRecords(recs), int32(3), int32(2))
	f.Add(encodeRecords(recs[:1]), int32(1), int32(0))
	f.Add([]byte{}, int32(0), int32(0))
	f.Add([]byte{2, 0}, int32(1), int32(0))
	f.Fuzz(func(t *testing.T, payload []byte, count, lastOffsetDelta int32) {
		if count > 1<<16 {
			count = 1 << 16 // the batch header check bounds it by the batch size anyway
		}
		out, err := parseRecords(nil, payload, count, lastOffsetDelta)
		if err != nil {
			return
		}
		var again, scratch []byte
		for _, r := range out {
			again, scratch = appendRecord(again, r, r.tsDelta, scratch)
		}
		back, err := parseRecords(nil, again, count, lastOffsetDelta)
		if err != nil || len(back) != len(out) {
			t.Fatalf("%d accepted records re-encoded do not parse back: %d, %v", len(out), len(back), err)
		}
		for i := range out {
			a, b := out[i], back[i]
			if a.attrs != b.attrs || a.tsDelta != b.tsDelta || a.offDelta != b.offDelta ||
				string(a.key) != string(b.key) || (a.key == nil) != (b.key == nil) ||
				string(a.value) != string(b.value) || (a.value == nil) != (b.value == nil) || string(a.headers) != string(b.headers) {
				t.Fatalf("record %d changed in re-encoding: %+v became %+v", i, a, b)
			}
		}
	})
}

// FuzzCheckKeys: the compacted-topic key check over any single batch that
// passes validation (its CRC recomputed, so fuzzing reaches the records),
// compressed with gzip or not, never panics.
func FuzzCheckKeys(f *testing.F) {
	payload := encodeRecords([]testRecord{{key: []byte("k"), value: []byte("v")}, {key: nil, value: []byte("w")}})
	f.Add(int16(0), int32(2), payload)
	z, _ := (gzipCodecs{}).Compress(CompressionGzip, nil, payload)
	f.Add(int16(CompressionGzip), int32(2), z)
	f.Add(int16(CompressionGzip), int32(1), []byte{0x1f, 0x8b, 8})
	f.Fuzz(func(t *testing.T, attrs int16, count int32, payload []byte) {
		b := makeBatchRaw(attrs, 1, 1, count, payload)
		h, err := ParseBatchHeader(b)
		if err != nil || validateBatchError(b) != nil {
			return
		}
		_ = checkKeys(b, []batchAt{{pos: 0, h: h}}, gzipCodecs{})
	})
}

func validateBatchError(b []byte) error {
	if _, be := validateBatch(b); be != nil {
		return be
	}
	return nil
}
