package bench

import (
	"bytes"
	"testing"

	"github.com/spool-log/spool/internal/recordbatch"
)

// The batch the raw client sends is one a broker takes, within the bound
// the settings are checked against, and walkBatches counts what a Fetch
// returns of such batches, a partial one at the end left out.
func TestRawBatchIsValidAndWalked(t *testing.T) {
	value := []byte("a value of some bytes")
	batch := rawRecordBatch(5, value, 1234)
	h, cerr := recordbatch.Check(batch, false)
	if cerr != nil {
		t.Fatalf("raw batch does not check: %v", cerr)
	}
	if h.NumRecords != 5 || h.LastOffsetDelta != 4 || h.FirstTimestamp != 1234 || h.ProducerID != -1 {
		t.Fatalf("raw batch header %+v", h)
	}
	if int64(len(batch)) > encodedBatchBytes(5, len(value)) {
		t.Fatalf("batch of %d bytes beyond its bound %d", len(batch), encodedBatchBytes(5, len(value)))
	}
	recs, err := recordbatch.Records(nil, batch, h, nil, 1<<20)
	if err != nil || len(recs) != 5 {
		t.Fatalf("records %v, %v", recs, err)
	}
	for i, r := range recs {
		if r.Key != nil || !bytes.Equal(r.Value, value) || r.OffsetDelta != int64(i) {
			t.Fatalf("record %d: %+v", i, r)
		}
	}

	// Two batches at offsets 10 and 15, then half of a third.
	second := append([]byte(nil), batch...)
	first := append([]byte(nil), batch...)
	putBase(first, 10)
	putBase(second, 15)
	fetched := append(append(append([]byte(nil), first...), second...), batch[:len(batch)/2]...)
	records, n, last := walkBatches(fetched)
	if records != 10 || n != int64(2*len(batch)) || last != 19 {
		t.Fatalf("walked %d records, %d bytes, last offset %d; want 10, %d, 19", records, n, last, 2*len(batch))
	}
	if _, _, last := walkBatches(batch[:30]); last != -1 {
		t.Fatalf("a partial header gave last offset %d", last)
	}
}

// putBase sets a batch's base offset, which its CRC does not cover.
func putBase(b []byte, base int64) {
	for i := 0; i < 8; i++ {
		b[recordbatch.OffBaseOffset+i] = byte(base >> (56 - 8*i))
	}
}
