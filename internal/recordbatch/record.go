package recordbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Record is one v2 record; its byte fields point into the batch it was
// parsed from.
type Record struct {
	Attributes     byte
	TimestampDelta int64  // from the batch's FirstTimestamp
	OffsetDelta    int64  // from the batch's BaseOffset
	Key            []byte // nil for a null key; empty but non-nil for an empty key
	Value          []byte // nil for a tombstone
	// Headers is the header count and the headers as stored; nil when
	// building means none. AppendHeaders encodes them, ParseHeaders reads.
	Headers []byte
}

// RecordHeader is one record header; a nil Value is a null value.
type RecordHeader struct {
	Key, Value []byte
}

// ParseRecords decodes count records that fill payload exactly, with offset
// deltas ascending and at most lastOffsetDelta, appending them to out.
func ParseRecords(out []Record, payload []byte, count int32, lastOffsetDelta int32) ([]Record, error) {
	prev := int64(-1)
	rest := payload
	for i := int32(0); i < count; i++ {
		pos := len(payload) - len(rest)
		r, next, err := NextRecord(rest)
		if err != nil {
			return out, fmt.Errorf("record %d at byte %d: %w", i, pos, err)
		}
		if r.OffsetDelta <= prev || r.OffsetDelta > int64(lastOffsetDelta) {
			return out, fmt.Errorf("record %d: offset delta %d out of order", i, r.OffsetDelta)
		}
		prev = r.OffsetDelta
		rest = next
		out = append(out, r)
	}
	if len(rest) != 0 {
		return out, fmt.Errorf("%d bytes after the last of %d records", len(rest), count)
	}
	return out, nil
}

// NextRecord decodes the length-prefixed record at the start of b and
// returns it with the bytes after it.
func NextRecord(b []byte) (Record, []byte, error) {
	length, n := Varint(b)
	if n <= 0 || length < 1 || length > int64(len(b)-n) {
		return Record{}, nil, errors.New("bad length")
	}
	r, reason := ParseRecord(b[n : n+int(length)])
	if reason != "" {
		return r, nil, errors.New(reason)
	}
	return r, b[n+int(length):], nil
}

// ParseRecord decodes one record body (after its length prefix), or says
// why it is malformed.
func ParseRecord(b []byte) (Record, string) {
	var r Record
	_, reason := walkRecord(b, &r)
	return r, reason
}

// walkRecord checks one record body and returns its offset delta, filling
// r if it is not nil: validation on the produce path walks every record
// and needs only the offset delta.
func walkRecord(b []byte, r *Record) (offsetDelta int64, reason string) {
	if len(b) < 1 {
		return 0, "empty record"
	}
	pos := 1 // attributes
	tsDelta, n := Varint(b[pos:])
	if n <= 0 {
		return 0, "bad timestamp delta"
	}
	pos += n
	if offsetDelta, n = Varint(b[pos:]); n <= 0 {
		return 0, "bad offset delta"
	}
	pos += n
	keyAt := pos
	if pos = skipBytes(b, pos, -1); pos < 0 {
		return 0, "bad key length"
	}
	valueAt := pos
	if pos = skipBytes(b, pos, -1); pos < 0 {
		return 0, "bad value length"
	}
	headersAt := pos
	headers, n := Varint(b[pos:])
	if n <= 0 || headers < 0 || headers > int64(len(b)-pos) {
		return 0, "bad header count"
	}
	pos += n
	for i := int64(0); i < headers; i++ {
		if pos = skipBytes(b, pos, 0); pos < 0 {
			return 0, "bad header key length"
		}
		if pos = skipBytes(b, pos, -1); pos < 0 {
			return 0, "bad header value length"
		}
	}
	if pos != len(b) {
		return 0, "length does not match its fields"
	}
	if r != nil {
		r.Attributes, r.TimestampDelta, r.OffsetDelta = b[0], tsDelta, offsetDelta
		r.Key, _, _ = nullableBytes(b, keyAt, -1)
		r.Value, _, _ = nullableBytes(b, valueAt, -1)
		r.Headers = b[headersAt:]
	}
	return offsetDelta, ""
}

// skipBytes skips a varint-length-prefixed byte string at pos whose length
// may be as low as minLen (-1 for nullable). It returns the position after
// it, or -1 if it is malformed or runs past b.
func skipBytes(b []byte, pos int, minLen int64) int {
	l, n := Varint(b[pos:])
	if n <= 0 || l < minLen || l > int64(len(b)-pos-n) {
		return -1
	}
	return pos + n + int(max(l, 0))
}

// ParseHeaders decodes a record's Headers field.
func ParseHeaders(raw []byte) ([]RecordHeader, error) {
	count, pos := Varint(raw)
	if pos <= 0 || count < 0 || count > int64(len(raw)) {
		return nil, errors.New("bad header count")
	}
	out := make([]RecordHeader, 0, count)
	for i := int64(0); i < count; i++ {
		var h RecordHeader
		var ok bool
		if h.Key, pos, ok = nullableBytes(raw, pos, 0); !ok {
			return nil, fmt.Errorf("header %d: bad key length", i)
		}
		if h.Value, pos, ok = nullableBytes(raw, pos, -1); !ok {
			return nil, fmt.Errorf("header %d: bad value length", i)
		}
		out = append(out, h)
	}
	if pos != len(raw) {
		return nil, errors.New("bytes after the last header")
	}
	return out, nil
}

// AppendHeaders encodes hs as a record's Headers field.
func AppendHeaders(dst []byte, hs []RecordHeader) []byte {
	dst = binary.AppendVarint(dst, int64(len(hs)))
	for _, h := range hs {
		dst = appendNullable(dst, h.Key)
		dst = appendNullable(dst, h.Value)
	}
	return dst
}

// AppendRecord encodes r, length prefix first. A nil Headers is written as
// no headers.
func AppendRecord(dst []byte, r Record) []byte {
	size := 1 + varintLen(r.TimestampDelta) + varintLen(r.OffsetDelta) +
		nullableLen(r.Key) + nullableLen(r.Value) + max(len(r.Headers), 1)
	dst = binary.AppendVarint(dst, int64(size))
	dst = append(dst, r.Attributes)
	dst = binary.AppendVarint(dst, r.TimestampDelta)
	dst = binary.AppendVarint(dst, r.OffsetDelta)
	dst = appendNullable(dst, r.Key)
	dst = appendNullable(dst, r.Value)
	if len(r.Headers) == 0 {
		return append(dst, 0)
	}
	return append(dst, r.Headers...)
}

// nullableBytes reads a varint-length-prefixed byte string at pos whose
// length may be as low as minLen (-1: nullable, read as nil). It returns
// the string, capped so appends never touch b, and the position after it.
func nullableBytes(b []byte, pos int, minLen int64) ([]byte, int, bool) {
	l, n := Varint(b[pos:])
	if n <= 0 || l < minLen || l > int64(len(b)-pos-n) {
		return nil, -1, false
	}
	pos += n
	if l < 0 {
		return nil, pos, true
	}
	end := pos + int(l)
	return b[pos:end:end], end, true
}

func appendNullable(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

func nullableLen(b []byte) int {
	if b == nil {
		return 1
	}
	return varintLen(int64(len(b))) + len(b)
}

func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// Varint decodes a zigzag varint of at most 10 bytes (Kafka's varint and
// varlong). n is the bytes used, or 0 if b ends first. Overlong values wrap
// rather than fail; every decoded length is bounds-checked by its caller.
func Varint(b []byte) (int64, int) {
	var u uint64
	for i := 0; i < len(b) && i < 10; i++ {
		c := b[i]
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), i + 1
		}
	}
	return 0, 0
}
