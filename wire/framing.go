package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Every request is a 4-byte big-endian size followed by that many bytes of
// header and body. The size is checked before anything is allocated for it,
// and the body buffer grows only as bytes actually arrive, so a client that
// claims a large frame and then stalls costs at most frameInitialAlloc.
const (
	// minFrameSize is the smallest request header: v0 is API key, version
	// and correlation ID (8 bytes); v1 and v2 add a client ID.
	minFrameSize = 8

	// frameInitialAlloc caps the first allocation for a frame's body.
	frameInitialAlloc = 256 << 10
)

// errFrameTruncated reports a connection that ended inside a frame.
var errFrameTruncated = errors.New("connection closed inside a request frame")

// frameSizeError reports a size prefix outside [minFrameSize, max].
type frameSizeError struct {
	size, max int32
}

func (e *frameSizeError) Error() string {
	if e.size > e.max {
		return fmt.Sprintf("request frame of %d bytes exceeds the limit of %d", e.size, e.max)
	}
	return fmt.Sprintf("request frame size %d is below the %d-byte minimum header", e.size, minFrameSize)
}

// readFrameSize reads and checks a frame's size prefix. A clean end of stream
// before the first byte is io.EOF; inside the prefix it is errFrameTruncated.
func readFrameSize(r io.Reader, scratch *[4]byte, max int32) (int32, error) {
	if _, err := io.ReadFull(r, scratch[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, errFrameTruncated
		}
		return 0, err
	}
	size := int32(binary.BigEndian.Uint32(scratch[:]))
	if size < minFrameSize || size > max {
		return 0, &frameSizeError{size: size, max: max}
	}
	return size, nil
}

// readFrameBody reads exactly size bytes, growing its buffer as data arrives.
func readFrameBody(r io.Reader, size int32) ([]byte, error) {
	buf := make([]byte, min(int(size), frameInitialAlloc))
	n := 0
	for n < int(size) {
		if n == len(buf) {
			grown := make([]byte, min(2*len(buf), int(size)))
			copy(grown, buf)
			buf = grown
		}
		m, err := r.Read(buf[n:])
		n += m
		if err != nil && n < int(size) {
			if errors.Is(err, io.EOF) {
				return nil, errFrameTruncated
			}
			return nil, err
		}
	}
	return buf, nil
}

// readFrame reads one whole frame; it is readFrameSize then readFrameBody.
func readFrame(r io.Reader, max int32) ([]byte, error) {
	var scratch [4]byte
	size, err := readFrameSize(r, &scratch, max)
	if err != nil {
		return nil, err
	}
	return readFrameBody(r, size)
}
