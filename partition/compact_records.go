package partition

import (
	"fmt"

	"github.com/spool-log/spool/internal/recordbatch"
)

// Codecs compresses and decompresses the records of a batch for the log
// cleaner and for the key check of compacted topics. The partition package
// imports no codec library; the node injects one through Config.Codecs.
type Codecs = recordbatch.Codecs

// maxDecompressedBytes bounds what one compressed batch may expand to when
// the cleaner or a key check looks inside it.
const maxDecompressedBytes = 64 << 20

// checkKeys refuses batches that hold a record without a key: a compacted
// topic keeps the newest record of each key, so a keyless record has no
// place in it (Kafka: "Compacted topic cannot accept message without key").
func checkKeys(batches []byte, hs []batchAt, codecs Codecs) error {
	var recs []recordbatch.Record
	for _, b := range hs {
		if b.h.Control() {
			continue
		}
		batch := batches[b.pos : b.pos+int(b.h.Size())]
		var err error
		if recs, err = recordbatch.Records(recs[:0], batch, b.h, codecs, maxDecompressedBytes); err != nil {
			return &BatchError{Kind: Invalid, Offset: b.pos, Reason: "compacted topic: " + err.Error()}
		}
		for i, r := range recs {
			if r.Key == nil {
				return &BatchError{Kind: Invalid, Offset: b.pos, Reason: fmt.Sprintf("compacted topic cannot accept a record without a key (record %d)", i)}
			}
		}
	}
	return nil
}

// rebuildBatch writes a batch holding only kept, the survivors of orig, as
// Kafka's MemoryRecords.filterTo does: the base offset, lastOffsetDelta,
// producer fields, leader epoch and codec stay those of orig, so every
// record keeps its offset; firstTimestamp is the delete horizon if one is
// set, else the first kept record's timestamp; maxTimestamp is the newest
// kept timestamp, or orig's under LogAppendTime. kept's timestamp deltas
// are rewritten from orig's firstTimestamp to the new one.
func rebuildBatch(dst []byte, orig BatchHeader, kept []recordbatch.Record, horizon int64, codecs Codecs) ([]byte, error) {
	h := orig
	h.Attributes &^= recordbatch.AttrDeleteHorizon
	h.FirstTimestamp = orig.FirstTimestamp + kept[0].TimestampDelta
	if horizon >= 0 {
		h.Attributes |= recordbatch.AttrDeleteHorizon
		h.FirstTimestamp = horizon
	}
	if !orig.LogAppendTime() {
		h.MaxTimestamp = orig.FirstTimestamp + kept[0].TimestampDelta
		for _, r := range kept[1:] {
			h.MaxTimestamp = max(h.MaxTimestamp, orig.FirstTimestamp+r.TimestampDelta)
		}
	}
	for i := range kept {
		kept[i].TimestampDelta += orig.FirstTimestamp - h.FirstTimestamp
	}
	out, err := recordbatch.Build(dst, h, kept, codecs)
	if err != nil {
		return dst, fmt.Errorf("recompress: %w", err)
	}
	return out, nil
}
