package recordbatch

import (
	"encoding/binary"
	"hash/crc32"
	"strconv"
)

// Byte positions of the header fields from the start of a batch. Length
// counts the bytes after the length field itself.
const (
	OffBaseOffset      = 0
	OffLength          = 8
	OffLeaderEpoch     = 12
	OffMagic           = 16
	OffCRC             = 17
	OffAttributes      = 21
	OffLastOffsetDelta = 23
	OffFirstTimestamp  = 27
	OffMaxTimestamp    = 35
	OffProducerID      = 43
	OffProducerEpoch   = 51
	OffBaseSequence    = 53
	OffNumRecords      = 57

	// HeaderSize is the size of the header, up to and including the
	// record count; the records follow.
	HeaderSize = 61
	// LengthOverhead is what precedes the bytes Length counts: a batch is
	// Length+LengthOverhead bytes.
	LengthOverhead = OffLeaderEpoch
	// MinLength is the smallest legal Length: a header and no records.
	MinLength = HeaderSize - LengthOverhead

	// Magic is the only record format version this package reads.
	Magic = 2
)

// Attribute bits.
const (
	AttrCompressionMask = 0x07
	AttrTimestampType   = 0x08 // LogAppendTime
	AttrTransactional   = 0x10
	AttrControl         = 0x20 // transaction markers
	// AttrDeleteHorizon says FirstTimestamp is the delete horizon (KIP-534):
	// the time after which the cleaner may remove the tombstones it holds.
	AttrDeleteHorizon = 0x40
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

// Header is the fixed header of a RecordBatch v2.
type Header struct {
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

// NoProducer is a header with no producer id, epoch, sequence or leader
// epoch (all -1), as a plain non-idempotent producer sends; set the rest.
func NoProducer() Header {
	return Header{PartitionLeaderEpoch: -1, Magic: Magic, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
}

// Size is the batch's total size in bytes, header included.
func (h Header) Size() int64 { return int64(h.Length) + LengthOverhead }

// LastOffset is the offset of the batch's last record.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// Compression is the codec in the low three attribute bits.
func (h Header) Compression() int { return int(h.Attributes & AttrCompressionMask) }

// LogAppendTime reports whether the timestamp-type bit says LogAppendTime.
func (h Header) LogAppendTime() bool { return h.Attributes&AttrTimestampType != 0 }

// Transactional reports the transactional attribute bit.
func (h Header) Transactional() bool { return h.Attributes&AttrTransactional != 0 }

// Control reports the control-batch attribute bit (transaction markers).
func (h Header) Control() bool { return h.Attributes&AttrControl != 0 }

// DeleteHorizon reports whether FirstTimestamp is a delete horizon.
func (h Header) DeleteHorizon() bool { return h.Attributes&AttrDeleteHorizon != 0 }

// ParseHeader decodes the header at the start of b. It checks only that b
// holds a whole header, not the magic, length or CRC (Check does).
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, &Error{Kind: Corrupt, Reason: "batch header truncated: " + strconv.Itoa(len(b)) + " bytes"}
	}
	be := binary.BigEndian
	return Header{
		BaseOffset:           int64(be.Uint64(b[OffBaseOffset:])),
		Length:               int32(be.Uint32(b[OffLength:])),
		PartitionLeaderEpoch: int32(be.Uint32(b[OffLeaderEpoch:])),
		Magic:                int8(b[OffMagic]),
		CRC:                  be.Uint32(b[OffCRC:]),
		Attributes:           int16(be.Uint16(b[OffAttributes:])),
		LastOffsetDelta:      int32(be.Uint32(b[OffLastOffsetDelta:])),
		FirstTimestamp:       int64(be.Uint64(b[OffFirstTimestamp:])),
		MaxTimestamp:         int64(be.Uint64(b[OffMaxTimestamp:])),
		ProducerID:           int64(be.Uint64(b[OffProducerID:])),
		ProducerEpoch:        int16(be.Uint16(b[OffProducerEpoch:])),
		BaseSequence:         int32(be.Uint32(b[OffBaseSequence:])),
		NumRecords:           int32(be.Uint32(b[OffNumRecords:])),
	}, nil
}

// AppendHeader appends h as the header of a batch whose records (possibly
// compressed) are payload, then payload, and stores the CRC. Length and CRC
// are computed; Magic is always 2; every other field is h's as given.
func AppendHeader(dst []byte, h Header, payload []byte) []byte {
	start := len(dst)
	be := binary.BigEndian
	dst = be.AppendUint64(dst, uint64(h.BaseOffset))
	dst = be.AppendUint32(dst, uint32(MinLength+len(payload)))
	dst = be.AppendUint32(dst, uint32(h.PartitionLeaderEpoch))
	dst = append(dst, Magic)
	dst = be.AppendUint32(dst, 0) // CRC, below
	dst = be.AppendUint16(dst, uint16(h.Attributes))
	dst = be.AppendUint32(dst, uint32(h.LastOffsetDelta))
	dst = be.AppendUint64(dst, uint64(h.FirstTimestamp))
	dst = be.AppendUint64(dst, uint64(h.MaxTimestamp))
	dst = be.AppendUint64(dst, uint64(h.ProducerID))
	dst = be.AppendUint16(dst, uint16(h.ProducerEpoch))
	dst = be.AppendUint32(dst, uint32(h.BaseSequence))
	dst = be.AppendUint32(dst, uint32(h.NumRecords))
	dst = append(dst, payload...)
	SetCRC(dst[start:])
	return dst
}

// CRC computes the CRC-32C the header of batch (one whole batch) should carry.
func CRC(batch []byte) uint32 {
	return crc32.Checksum(batch[OffAttributes:], castagnoli)
}

// SetCRC stores the CRC of batch (one whole batch) in its header, after a
// field it covers was changed in place.
func SetCRC(batch []byte) {
	binary.BigEndian.PutUint32(batch[OffCRC:], CRC(batch))
}
