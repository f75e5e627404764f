package partition

import (
	"errors"

	"github.com/spool-log/spool/internal/recordbatch"
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
type BatchErrorKind = recordbatch.ErrorKind

const (
	// Corrupt is a batch whose bytes are damaged: a bad length or CRC
	// (CORRUPT_MESSAGE).
	Corrupt = recordbatch.Corrupt
	// Invalid is an intact batch whose contents break the format's rules:
	// wrong magic, record count, codec or record framing (INVALID_RECORD).
	Invalid = recordbatch.Invalid
)

// BatchError is why Append or ValidateBatches refused the batches; nothing of
// a refused Append reaches disk. Use errors.As to get it.
type BatchError = recordbatch.Error
