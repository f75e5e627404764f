package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sync"
)

// Every request is a 4-byte big-endian size followed by that many bytes of
// header and body. The size is checked before anything is allocated for it.
// A body's first frameInitialAlloc bytes are read into a buffer of at most
// that size; only once they have arrived is the rest allocated, in one step,
// so a client that claims a large frame and then stalls costs at most
// frameInitialAlloc, while an honest large frame is copied once (its first
// chunk) rather than at every doubling of a growing buffer.
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

// readFrameBody reads exactly size bytes. With a pool, the body lives in a
// pooled buffer (returned with it) that the caller gives back with put once
// nothing refers to the frame any more; without one, buf is nil and the
// frame is a fresh allocation.
func readFrameBody(r io.Reader, size int32, pool *framePool) (frame []byte, buf *frameBuffer, err error) {
	n := int(size)
	first := min(n, frameInitialAlloc)
	head := pool.get(first)
	if err := readFull(r, head.b[:first]); err != nil {
		pool.put(head)
		return nil, nil, err
	}
	if first == n {
		return head.b[:n], head, nil
	}
	// The client is sending: take the whole frame now.
	whole := pool.get(n)
	copy(whole.b, head.b[:first])
	pool.put(head)
	if err := readFull(r, whole.b[first:n]); err != nil {
		pool.put(whole)
		return nil, nil, err
	}
	return whole.b[:n], whole, nil
}

// readFull is io.ReadFull with an end of stream anywhere made
// errFrameTruncated: the size prefix promised these bytes.
func readFull(r io.Reader, b []byte) error {
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return errFrameTruncated
		}
		return err
	}
	return nil
}

// readFrame reads one whole frame into a fresh buffer; it is readFrameSize
// then readFrameBody.
func readFrame(r io.Reader, max int32) ([]byte, error) {
	var scratch [4]byte
	size, err := readFrameSize(r, &scratch, max)
	if err != nil {
		return nil, err
	}
	frame, _, err := readFrameBody(r, size, nil)
	return frame, err
}

// Frame buffers are pooled by power-of-two size class, from 1 KiB to 16 MiB
// (Produce batches are at most max.message.bytes, 1 MiB by default); bigger
// frames are allocated and left to the garbage collector. A pooled buffer
// is not zeroed: every byte of a frame is read before it is used.
const (
	minFrameClassShift = 10
	maxFrameClassShift = 24
)

// frameBuffer is one pooled buffer; the pointer travels with the frame so
// that returning it allocates nothing.
type frameBuffer struct{ b []byte }

// framePool hands out frame buffers. A nil *framePool allocates every
// buffer and put does nothing.
type framePool struct {
	classes [maxFrameClassShift - minFrameClassShift + 1]sync.Pool
}

// frameClass is the size class holding n bytes, or -1 if n is too big.
func frameClass(n int) int {
	shift := max(bits.Len(uint(max(n, 1)-1)), minFrameClassShift)
	if shift > maxFrameClassShift {
		return -1
	}
	return shift - minFrameClassShift
}

// get returns a buffer of at least n bytes.
func (p *framePool) get(n int) *frameBuffer {
	if p == nil {
		return &frameBuffer{b: make([]byte, n)}
	}
	c := frameClass(n)
	if c < 0 {
		return &frameBuffer{b: make([]byte, n)}
	}
	if fb, ok := p.classes[c].Get().(*frameBuffer); ok {
		return fb
	}
	return &frameBuffer{b: make([]byte, 1<<(c+minFrameClassShift))}
}

// put returns a buffer for reuse; the caller must hold no slice of it.
func (p *framePool) put(fb *frameBuffer) {
	if p == nil || fb == nil {
		return
	}
	c := frameClass(cap(fb.b))
	if c < 0 || cap(fb.b) != 1<<(c+minFrameClassShift) {
		return // not one of ours: an oversized frame
	}
	fb.b = fb.b[:cap(fb.b)]
	p.classes[c].Put(fb)
}
