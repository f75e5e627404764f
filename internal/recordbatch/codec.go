package recordbatch

import (
	"errors"
	"fmt"
)

// Codecs compresses and decompresses the records of a batch.
// internal/recordbatch/compression implements it with the codec libraries.
type Codecs interface {
	// Decompress returns the record bytes that src holds, compressed with
	// codec (CompressionGzip..CompressionZstd), refusing to produce more
	// than limit bytes (an error wrapping ErrTooLarge).
	Decompress(codec int, src []byte, limit int) ([]byte, error)
	// Compress appends src compressed with codec to dst, in the framing
	// Kafka's clients read (xerial for snappy, LZ4 frames for lz4).
	Compress(codec int, dst, src []byte) ([]byte, error)
}

// ErrTooLarge is wrapped by a Decompress that would exceed its limit.
var ErrTooLarge = errors.New("decompressed batch too large")

// Payload returns the record bytes of a whole batch with header h,
// decompressed with codecs (which may be nil for uncompressed batches) to
// at most limit bytes.
func Payload(batch []byte, h Header, codecs Codecs, limit int) ([]byte, error) {
	payload := batch[HeaderSize:]
	c := h.Compression()
	if c == CompressionNone {
		return payload, nil
	}
	if codecs == nil {
		return nil, fmt.Errorf("batch at offset %d is compressed with codec %d and no codecs are configured", h.BaseOffset, c)
	}
	out, err := codecs.Decompress(c, payload, limit)
	if err != nil {
		return nil, fmt.Errorf("decompress batch at offset %d (codec %d): %w", h.BaseOffset, c, err)
	}
	return out, nil
}

// Records appends to out the records of a whole batch with header h
// (validated by Check), decompressing its payload to at most limit bytes.
func Records(out []Record, batch []byte, h Header, codecs Codecs, limit int) ([]Record, error) {
	payload, err := Payload(batch, h, codecs, limit)
	if err != nil {
		return out, err
	}
	return ParseRecords(out, payload, h.NumRecords, h.LastOffsetDelta)
}
