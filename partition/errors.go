package partition

import (
	"errors"
	"fmt"
)

var (
	// ErrOffsetOutOfRange is returned by Read for an offset before the log
	// start or past the log end (OFFSET_OUT_OF_RANGE).
	ErrOffsetOutOfRange = errors.New("offset out of range")
	// ErrClosed is returned by every operation on a closed or deleted Log.
	ErrClosed = errors.New("log closed")
	// ErrCorrupt is returned by Read when the batch a read starts with is
	// damaged: its length runs off the segment, or a scrub found its CRC
	// or offsets wrong. Reads that start before it stop short of it.
	ErrCorrupt = errors.New("corrupt record batch on disk")
)

// BatchErrorKind says which Kafka error a refused batch maps to.
type BatchErrorKind int

const (
	// Corrupt is a batch whose bytes are damaged: a bad length or CRC
	// (CORRUPT_MESSAGE).
	Corrupt BatchErrorKind = iota + 1
	// Invalid is an intact batch whose contents break the format's rules:
	// wrong magic, record count, codec or record framing (INVALID_RECORD).
	Invalid
)

func (k BatchErrorKind) String() string {
	switch k {
	case Corrupt:
		return "corrupt"
	case Invalid:
		return "invalid"
	}
	return fmt.Sprintf("BatchErrorKind(%d)", int(k))
}

// BatchError is why Append or ValidateBatches refused the batches; nothing of
// a refused Append reaches disk. Use errors.As to get it.
type BatchError struct {
	Kind   BatchErrorKind
	Offset int // byte position in the bytes given where the problem was found
	Reason string
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("%s record batch at byte %d: %s", e.Kind, e.Offset, e.Reason)
}
