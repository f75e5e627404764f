package wire

import (
	"encoding/binary"
	"errors"
)

// errShortRead reports a header or field that runs past the end of its frame.
var errShortRead = errors.New("field runs past the end of the frame")

// fieldReader reads Kafka primitives from a frame without ever reading past
// its end or allocating from a length the client claims; the first failure
// sticks and later reads return zero values.
type fieldReader struct {
	src []byte
	err error
}

func (r *fieldReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.src) {
		r.err = errShortRead
		r.src = nil
		return nil
	}
	b := r.src[:n]
	r.src = r.src[n:]
	return b
}

func (r *fieldReader) int16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *fieldReader) int32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

// nullableString reads an INT16-length string; -1 is null.
func (r *fieldReader) nullableString() *string {
	n := r.int16()
	if r.err != nil || n == -1 {
		return nil
	}
	if n < -1 {
		r.err = errors.New("negative string length")
		return nil
	}
	b := r.take(int(n))
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// uvarint reads an unsigned varint of at most 5 bytes (a uint32).
func (r *fieldReader) uvarint() uint32 {
	var v uint32
	for i := 0; i < 5; i++ {
		b := r.take(1)
		if b == nil {
			return 0
		}
		v |= uint32(b[0]&0x7f) << (7 * i)
		if b[0] < 0x80 {
			return v
		}
	}
	r.err = errors.New("uvarint longer than 5 bytes")
	return 0
}

// skipTags skips a tagged-field section. Each field is at least two bytes,
// which bounds the loop by the frame rather than by the count claimed.
func (r *fieldReader) skipTags() {
	n := r.uvarint()
	for ; n > 0 && r.err == nil; n-- {
		r.uvarint() // tag
		size := r.uvarint()
		if size > uint32(len(r.src)) {
			r.err = errShortRead
			return
		}
		r.take(int(size))
	}
}

func appendInt16(dst []byte, v int16) []byte {
	return binary.BigEndian.AppendUint16(dst, uint16(v))
}

func appendInt32(dst []byte, v int32) []byte {
	return binary.BigEndian.AppendUint32(dst, uint32(v))
}

func appendInt64(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}

func appendUvarint(dst []byte, v uint32) []byte {
	return binary.AppendUvarint(dst, uint64(v))
}

// appendString writes STRING (INT16 length) or COMPACT_STRING (uvarint
// length+1) as the message version asks.
func appendString(dst []byte, s string, flexible bool) []byte {
	if flexible {
		dst = appendUvarint(dst, uint32(len(s))+1)
	} else {
		dst = appendInt16(dst, int16(len(s)))
	}
	return append(dst, s...)
}

// appendArrayLen writes ARRAY (INT32 count) or COMPACT_ARRAY (uvarint count+1).
func appendArrayLen(dst []byte, n int, flexible bool) []byte {
	if flexible {
		return appendUvarint(dst, uint32(n)+1)
	}
	return appendInt32(dst, int32(n))
}

// appendNullArrayLen writes a null ARRAY / COMPACT_NULLABLE array.
func appendNullArrayLen(dst []byte, flexible bool) []byte {
	if flexible {
		return append(dst, 0)
	}
	return appendInt32(dst, -1)
}

// appendBytesLen writes the length prefix of NULLABLE_BYTES (INT32) or
// COMPACT_NULLABLE_BYTES (uvarint length+1) for a non-null value of n bytes.
func appendBytesLen(dst []byte, n int32, flexible bool) []byte {
	if flexible {
		return appendUvarint(dst, uint32(n)+1)
	}
	return appendInt32(dst, n)
}

// appendEmptyTags writes a tagged-field section with no fields.
func appendEmptyTags(dst []byte) []byte { return append(dst, 0) }
