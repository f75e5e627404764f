package recordbatch

import "testing"

// FuzzParseRecords: the record walk the cleaner and the compacted-topic key
// check use takes any payload and counts without panicking, and what it
// accepts, re-encoded by AppendRecord (as the cleaner rewrites survivors),
// parses back to the same records.
func FuzzParseRecords(f *testing.F) {
	recs := []testRecord{
		{key: []byte("k"), value: []byte("v"), headers: []RecordHeader{{Key: []byte("h"), Value: []byte("x")}}},
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
		out, err := ParseRecords(nil, payload, count, lastOffsetDelta)
		if err != nil {
			return
		}
		var again []byte
		for _, r := range out {
			again = AppendRecord(again, r)
		}
		back, err := ParseRecords(nil, again, count, lastOffsetDelta)
		if err != nil || len(back) != len(out) {
			t.Fatalf("%d accepted records re-encoded do not parse back: %d, %v", len(out), len(back), err)
		}
		for i := range out {
			a, b := out[i], back[i]
			if a.Attributes != b.Attributes || a.TimestampDelta != b.TimestampDelta || a.OffsetDelta != b.OffsetDelta ||
				string(a.Key) != string(b.Key) || (a.Key == nil) != (b.Key == nil) ||
				string(a.Value) != string(b.Value) || (a.Value == nil) != (b.Value == nil) || string(a.Headers) != string(b.Headers) {
				t.Fatalf("record %d changed in re-encoding: %+v became %+v", i, a, b)
			}
			if _, err := ParseHeaders(a.Headers); err != nil {
				t.Fatalf("record %d: accepted headers do not parse: %v", i, err)
			}
		}
	})
}
