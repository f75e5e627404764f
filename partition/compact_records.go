package partition

import (
	"encoding/binary"
	"fmt"
)

// Codecs compresses and decompresses the records of a batch for the log
// cleaner and for the key check of compacted topics. The partition package
// imports no codec library; the node injects one through Config.Codecs.
type Codecs interface {
	// Decompress returns the record bytes that src holds, compressed with
	// codec (CompressionGzip..CompressionZstd), refusing to produce more
	// than limit bytes.
	Decompress(codec int, src []byte, limit int) ([]byte, error)
	// Compress appends src compressed with codec to dst, in the framing
	// Kafka's clients read (xerial for snappy, LZ4 frames for lz4).
	Compress(codec int, dst, src []byte) ([]byte, error)
}

// attrDeleteHorizon says that a batch's firstTimestamp is its delete
// horizon (KIP-534): the time after which the cleaner may remove the
// tombstones it holds.
const attrDeleteHorizon = 0x40

// maxDecompressedBytes bounds what one compressed batch may expand to when
// the cleaner or a key check looks inside it.
const maxDecompressedBytes = 64 << 20

// record is one Kafka v2 record, its byte fields pointing into the batch.
type record struct {
	attrs    byte
	tsDelta  int64
	offDelta int64
	key      []byte // nil for a null key; empty but non-nil for an empty key
	value    []byte // nil for a tombstone
	headers  []byte // header count and headers, as stored
}

// parseRecords decodes count records that fill payload exactly, with offset
// deltas ascending and at most lastOffsetDelta, appending them to out.
func parseRecords(out []record, payload []byte, count int32, lastOffsetDelta int32) ([]record, error) {
	pos := 0
	prev := int64(-1)
	for i := int32(0); i < count; i++ {
		length, n := varint(payload[pos:])
		if n <= 0 || length < 1 || length > int64(len(payload)-pos-n) {
			return out, fmt.Errorf("record %d at byte %d: bad length", i, pos)
		}
		pos += n
		r, reason := parseRecord(payload[pos : pos+int(length)])
		if reason != "" {
			return out, fmt.Errorf("record %d at byte %d: %s", i, pos, reason)
		}
		if r.offDelta <= prev || r.offDelta > int64(lastOffsetDelta) {
			return out, fmt.Errorf("record %d: offset delta %d out of order", i, r.offDelta)
		}
		prev = r.offDelta
		pos += int(length)
		out = append(out, r)
	}
	if pos != len(payload) {
		return out, fmt.Errorf("%d bytes after the last of %d records", len(payload)-pos, count)
	}
	return out, nil
}

// parseRecord decodes one record body (after its length prefix).
func parseRecord(b []byte) (record, string) {
	var r record
	if len(b) < 1 {
		return r, "empty record"
	}
	r.attrs = b[0]
	pos := 1
	var n int
	if r.tsDelta, n = varint(b[pos:]); n <= 0 {
		return r, "bad timestamp delta"
	}
	pos += n
	if r.offDelta, n = varint(b[pos:]); n <= 0 {
		return r, "bad offset delta"
	}
	pos += n
	var ok bool
	if r.key, pos, ok = nullableBytes(b, pos); !ok {
		return r, "bad key length"
	}
	if r.value, pos, ok = nullableBytes(b, pos); !ok {
		return r, "bad value length"
	}
	r.headers = b[pos:]
	headers, n := varint(b[pos:])
	if n <= 0 || headers < 0 || headers > int64(len(b)-pos) {
		return r, "bad header count"
	}
	pos += n
	for i := int64(0); i < headers; i++ {
		if pos = skipBytes(b, pos, 0); pos < 0 {
			return r, "bad header key length"
		}
		if pos = skipBytes(b, pos, -1); pos < 0 {
			return r, "bad header value length"
		}
	}
	if pos != len(b) {
		return r, "length does not match its fields"
	}
	return r, ""
}

// nullableBytes reads a varint-length-prefixed byte string at pos; a length
// of -1 is null (nil). The slice is capped so appends never touch the batch.
func nullableBytes(b []byte, pos int) ([]byte, int, bool) {
	l, n := varint(b[pos:])
	if n <= 0 || l < -1 || l > int64(len(b)-pos-n) {
		return nil, -1, false
	}
	pos += n
	if l < 0 {
		return nil, pos, true
	}
	end := pos + int(l)
	return b[pos:end:end], end, true
}

// appendRecord encodes r with the given timestamp delta, length prefix first.
func appendRecord(dst []byte, r record, tsDelta int64, scratch []byte) ([]byte, []byte) {
	body := append(scratch[:0], r.attrs)
	body = binary.AppendVarint(body, tsDelta)
	body = binary.AppendVarint(body, r.offDelta)
	body = appendNullable(body, r.key)
	body = appendNullable(body, r.value)
	body = append(body, r.headers...)
	dst = binary.AppendVarint(dst, int64(len(body)))
	return append(dst, body...), body
}

func appendNullable(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// batchRecords returns the records of a validated batch, decompressing its
// payload with codecs if needed.
func batchRecords(out []record, batch []byte, h BatchHeader, codecs Codecs) ([]record, error) {
	payload := batch[BatchHeaderSize:]
	if c := h.Compression(); c != CompressionNone {
		if codecs == nil {
			return out, fmt.Errorf("batch at offset %d is compressed with codec %d and no codecs are configured", h.BaseOffset, c)
		}
		var err error
		if payload, err = codecs.Decompress(c, payload, maxDecompressedBytes); err != nil {
			return out, fmt.Errorf("decompress batch at offset %d (codec %d): %w", h.BaseOffset, c, err)
		}
	}
	return parseRecords(out, payload, h.NumRecords, h.LastOffsetDelta)
}

// checkKeys refuses batches that hold a record without a key: a compacted
// topic keeps the newest record of each key, so a keyless record has no
// place in it (Kafka: "Compacted topic cannot accept message without key").
func checkKeys(batches []byte, hs []batchAt, codecs Codecs) error {
	var recs []record
	for _, b := range hs {
		if b.h.Control() {
			continue
		}
		batch := batches[b.pos : b.pos+int(b.h.Size())]
		var err error
		if recs, err = batchRecords(recs[:0], batch, b.h, codecs); err != nil {
			return &BatchError{Kind: Invalid, Offset: b.pos, Reason: "compacted topic: " + err.Error()}
		}
		for i, r := range recs {
			if r.key == nil {
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
// kept timestamp, or orig's under LogAppendTime.
func rebuildBatch(dst []byte, orig BatchHeader, kept []record, horizon int64, codecs Codecs) ([]byte, error) {
	attrs := orig.Attributes &^ attrDeleteHorizon
	first := orig.FirstTimestamp + kept[0].tsDelta
	if horizon >= 0 {
		attrs |= attrDeleteHorizon
		first = horizon
	}
	maxTS := orig.MaxTimestamp
	if !orig.LogAppendTime() {
		maxTS = orig.FirstTimestamp + kept[0].tsDelta
		for _, r := range kept[1:] {
			maxTS = max(maxTS, orig.FirstTimestamp+r.tsDelta)
		}
	}
	var payload, scratch []byte
	for _, r := range kept {
		payload, scratch = appendRecord(payload, r, orig.FirstTimestamp+r.tsDelta-first, scratch)
	}
	if c := orig.Compression(); c != CompressionNone {
		if codecs == nil {
			return dst, fmt.Errorf("recompress batch at offset %d: no codecs configured", orig.BaseOffset)
		}
		var err error
		if payload, err = codecs.Compress(c, nil, payload); err != nil {
			return dst, fmt.Errorf("recompress batch at offset %d (codec %d): %w", orig.BaseOffset, c, err)
		}
	}
	start := len(dst)
	be := binary.BigEndian
	dst = be.AppendUint64(dst, uint64(orig.BaseOffset))
	dst = be.AppendUint32(dst, uint32(BatchHeaderSize-batchOverhead+len(payload)))
	dst = be.AppendUint32(dst, uint32(orig.PartitionLeaderEpoch))
	dst = append(dst, 2)
	dst = be.AppendUint32(dst, 0) // CRC, below
	dst = be.AppendUint16(dst, uint16(attrs))
	dst = be.AppendUint32(dst, uint32(orig.LastOffsetDelta))
	dst = be.AppendUint64(dst, uint64(first))
	dst = be.AppendUint64(dst, uint64(maxTS))
	dst = be.AppendUint64(dst, uint64(orig.ProducerID))
	dst = be.AppendUint16(dst, uint16(orig.ProducerEpoch))
	dst = be.AppendUint32(dst, uint32(orig.BaseSequence))
	dst = be.AppendUint32(dst, uint32(len(kept)))
	dst = append(dst, payload...)
	be.PutUint32(dst[start+offCRC:], batchCRC(dst[start:]))
	return dst, nil
}
