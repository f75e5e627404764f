package recordbatch

import "fmt"

// ErrorKind says which Kafka error a refused batch maps to.
type ErrorKind int

const (
	// Corrupt is a batch whose bytes are damaged: a bad length or CRC
	// (CORRUPT_MESSAGE).
	Corrupt ErrorKind = iota + 1
	// Invalid is an intact batch whose contents break the format's rules:
	// wrong magic, record count, codec or record framing (INVALID_RECORD).
	Invalid
)

func (k ErrorKind) String() string {
	switch k {
	case Corrupt:
		return "corrupt"
	case Invalid:
		return "invalid"
	}
	return fmt.Sprintf("BatchErrorKind(%d)", int(k))
}

// Error is why a batch was refused. Use errors.As to get it.
type Error struct {
	Kind   ErrorKind
	Offset int // byte position in the bytes given where the problem was found
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s record batch at byte %d: %s", e.Kind, e.Offset, e.Reason)
}

func corrupt(off int, format string, args ...any) *Error {
	return &Error{Kind: Corrupt, Offset: off, Reason: fmt.Sprintf(format, args...)}
}

func invalid(off int, format string, args ...any) *Error {
	return &Error{Kind: Invalid, Offset: off, Reason: fmt.Sprintf(format, args...)}
}
