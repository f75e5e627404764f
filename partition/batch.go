package partition

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
)

// RecordBatch v2 layout (KIP-98). Every offset below is from the start of the
// batch; batchLength counts the bytes after the length field itself.
const (
	offBaseOffset      = 0
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offFirstTimestamp  = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offNumRecords      = 57

	// BatchHeaderSize is the size of a RecordBatch v2 header, up to and
	// including the record count.
	BatchHeaderSize = 61

	// batchOverhead is what precedes the bytes batchLength counts.
	batchOverhead = offLeaderEpoch
	// minBatchLength is the smallest legal batchLength: a header and no records.
	minBatchLength = BatchHeaderSize - batchOverhead

	attrCompressionMask = 0x07
	attrTimestampType   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
)

// Compression codecs as stored in the low three attribute bits.
const (
	CompressionNone   = 0
	CompressionGzip   = 1
	CompressionSnappy = 2
	CompressionLZ4    = 3
	CompressionZstd   = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the fixed header of a Kafka RecordBatch v2.
type BatchHeader struct {
	BaseOffset           int64
	Length               int32 // bytes after the length field: the batch is Length+12 bytes
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32 // CRC-32C of the bytes from Attributes to the end
	Attributes           int16
	LastOffsetDelta      int32
	FirstTimestamp       int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// Size is the batch's total size in bytes, header included.
func (h BatchHeader) Size() int64 { return int64(h.Length) + batchOverhead }

// LastOffset is the offset of the batch's last record.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// Compression is the codec in the low three attribute bits.
func (h BatchHeader) Compression() int { return int(h.Attributes & attrCompressionMask) }

// LogAppendTime reports whether the timestamp-type bit says LogAppendTime.
func (h BatchHeader) LogAppendTime() bool { return h.Attributes&attrTimestampType != 0 }

// Transactional reports the transactional attribute bit.
func (h BatchHeader) Transactional() bool { return h.Attributes&attrTransactional != 0 }

// Control reports the control-batch attribute bit (transaction markers).
func (h BatchHeader) Control() bool { return h.Attributes&attrControl != 0 }

// ParseBatchHeader decodes the header at the start of b. It checks only that
// b holds a whole header; it does not check the magic, length or CRC (see
// ValidateBatches for that).
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, &BatchError{Kind: Corrupt, Reason: "batch header truncated: " + strconv.Itoa(len(b)) + " bytes"}
	}
	be := binary.BigEndian
	return BatchHeader{
		BaseOffset:           int64(be.Uint64(b[offBaseOffset:])),
		Length:               int32(be.Uint32(b[offBatchLength:])),
		PartitionLeaderEpoch: int32(be.Uint32(b[offLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  be.Uint32(b[offCRC:]),
		Attributes:           int16(be.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(be.Uint32(b[offLastOffsetDelta:])),
		FirstTimestamp:       int64(be.Uint64(b[offFirstTimestamp:])),
		MaxTimestamp:         int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(be.Uint32(b[offBaseSequence:])),
		NumRecords:           int32(be.Uint32(b[offNumRecords:])),
	}, nil
}

// ValidateBatches checks a concatenation of RecordBatch v2 exactly as Append
// does, without writing anything: every batch's declared length fits, magic is
// 2, the CRC-32C over attributes..end matches, the record count is positive and
// equals lastOffsetDelta+1, the codec is known, and for uncompressed batches
// every record parses and the records fill the batch exactly. It returns a
// *BatchError naming the byte position in b of the first bad batch.
func ValidateBatches(b []byte) error {
	_, err := scanBatches(b, nil)
	return err
}

// scanBatches validates every batch in b and, if visit is non-nil, calls it
// with each batch's position and header. It returns the number of batches.
func scanBatches(b []byte, visit func(pos int, h BatchHeader)) (int, error) {
	if len(b) == 0 {
		return 0, &BatchError{Kind: Invalid, Reason: "no record batches"}
	}
	n := 0
	for pos := 0; pos < len(b); {
		h, err := validateBatch(b[pos:])
		if err != nil {
			err.Offset += pos
			return n, err
		}
		if visit != nil {
			visit(pos, h)
		}
		pos += int(h.Size())
		n++
	}
	return n, nil
}

// validateBatch checks the batch at the start of b (which may run on past it).
// The returned error's Offset is relative to b.
func validateBatch(b []byte) (BatchHeader, *BatchError) {
	return validateStoredBatch(b, false)
}

// validateStoredBatch is validateBatch for batches already in a log. With
// cleaned set it accepts what the log cleaner writes: a batch keeps its
// offset range (lastOffsetDelta) when records are dropped from it, as
// Kafka's MemoryRecords.filterTo does, so it may hold fewer records than
// lastOffsetDelta+1.
func validateStoredBatch(b []byte, cleaned bool) (BatchHeader, *BatchError) {
	h, err := ParseBatchHeader(b)
	if err != nil {
		be := err.(*BatchError)
		return h, be
	}
	if h.Length < minBatchLength {
		return h, corrupt(offBatchLength, "batch length %d below minimum %d", int64(h.Length), minBatchLength)
	}
	if h.Size() > int64(len(b)) {
		return h, corrupt(offBatchLength, "batch length %d runs past the %d bytes given", int64(h.Length), int64(len(b)))
	}
	if h.Magic != 2 {
		return h, invalid(offMagic, "magic %d, want 2", h.Magic)
	}
	batch := b[:h.Size()]
	if got := crc32.Checksum(batch[offAttributes:], castagnoli); got != h.CRC {
		return h, corrupt(offCRC, "crc %d, computed %d", int64(h.CRC), int64(got))
	}
	if h.NumRecords <= 0 {
		return h, invalid(offNumRecords, "record count %d, want > 0", h.NumRecords)
	}
	if int64(h.NumRecords) != int64(h.LastOffsetDelta)+1 && (!cleaned || int64(h.NumRecords) > int64(h.LastOffsetDelta)+1) {
		return h, invalid(offNumRecords, "record count %d with lastOffsetDelta %d", int64(h.NumRecords), int64(h.LastOffsetDelta))
	}
	switch h.Compression() {
	case CompressionNone:
		if e := validateRecords(batch[BatchHeaderSize:], int(h.NumRecords), h.LastOffsetDelta); e != nil {
			e.Offset += BatchHeaderSize
			return h, e
		}
	case CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd:
		// Records are inside the compressed payload; counting them would mean
		// decompressing, which the header's count check stands in for.
	default:
		return h, invalid(offAttributes, "unknown compression codec %d", h.Compression())
	}
	return h, nil
}

// validateRecords walks uncompressed v2 records: each is a varint length
// followed by exactly that many bytes of attributes, timestamp delta, offset
// delta, key, value and headers.
func validateRecords(b []byte, count int, lastOffsetDelta int32) *BatchError {
	pos := 0
	prevDelta := int64(-1)
	for i := 0; i < count; i++ {
		start := pos
		length, n := varint(b[pos:])
		if n <= 0 {
			return invalid(pos, "record %d: bad length varint", i)
		}
		pos += n
		if length < 1 || length > int64(len(b)-pos) {
			return invalid(start, "record %d: length %d out of bounds", int64(i), length)
		}
		rec := b[pos : pos+int(length)]
		pos += int(length)
		delta, err := validateRecord(rec)
		if err != "" {
			return invalid(start, "record %d: %s", i, err)
		}
		if delta <= prevDelta || delta > int64(lastOffsetDelta) {
			return invalid(start, "record %d: offset delta %d out of order", int64(i), delta)
		}
		prevDelta = delta
	}
	if pos != len(b) {
		return invalid(pos, "%d bytes after the last of %d records", int64(len(b)-pos), int64(count))
	}
	return nil
}

// validateRecord checks one record body (after its length) and returns its
// offset delta, or a reason it is malformed.
func validateRecord(r []byte) (offsetDelta int64, reason string) {
	if len(r) < 1 {
		return 0, "empty record"
	}
	pos := 1 // attributes
	_, n := varint(r[pos:])
	if n <= 0 {
		return 0, "bad timestamp delta"
	}
	pos += n
	offsetDelta, n = varint(r[pos:])
	if n <= 0 {
		return 0, "bad offset delta"
	}
	pos += n
	if pos = skipBytes(r, pos, -1); pos < 0 {
		return 0, "bad key length"
	}
	if pos = skipBytes(r, pos, -1); pos < 0 {
		return 0, "bad value length"
	}
	headers, n := varint(r[pos:])
	if n <= 0 || headers < 0 || headers > int64(len(r)-pos) {
		return 0, "bad header count"
	}
	pos += n
	for i := int64(0); i < headers; i++ {
		if pos = skipBytes(r, pos, 0); pos < 0 {
			return 0, "bad header key length"
		}
		if pos = skipBytes(r, pos, -1); pos < 0 {
			return 0, "bad header value length"
		}
	}
	if pos != len(r) {
		return 0, "length does not match its fields"
	}
	return offsetDelta, ""
}

// skipBytes skips a varint-length-prefixed byte string at pos whose length
// may be as low as minLen (-1 for nullable). It returns the position after
// it, or -1 if it is malformed or runs past r.
func skipBytes(r []byte, pos int, minLen int64) int {
	l, n := varint(r[pos:])
	if n <= 0 || l < minLen || l > int64(len(r)-pos-n) {
		return -1
	}
	return pos + n + int(max(l, 0))
}

// varint decodes a zigzag varint of at most 10 bytes (Kafka's varint and
// varlong). n is the bytes used, or 0 if b ends first. Overlong values wrap
// rather than fail; every decoded length is bounds-checked by its caller.
func varint(b []byte) (int64, int) {
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

// batchCRC computes the CRC-32C a batch's header should carry.
func batchCRC(batch []byte) uint32 {
	return crc32.Checksum(batch[offAttributes:], castagnoli)
}

func corrupt(off int, format string, args ...any) *BatchError {
	return &BatchError{Kind: Corrupt, Offset: off, Reason: fmt.Sprintf(format, args...)}
}

func invalid(off int, format string, args ...any) *BatchError {
	return &BatchError{Kind: Invalid, Offset: off, Reason: fmt.Sprintf(format, args...)}
}
