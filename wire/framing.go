package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sync"
	"time"
)

// Every request is a 4-byte big-endian size followed by that many bytes of
// header and body. The size is checked before anything is allocated for it,
// and the body's buffer then grows with the bytes that actually arrive: the
// first frameInitialAlloc bytes, then twice the bytes received, or the whole
// frame once that is at most eight times them (see nextFrameAlloc). A client
// that claims a large frame and then sends little or nothing costs the first
// chunk, or twice what it sent (eight times, for a claim within eight times
// it), not what it claimed; an honest frame of up to 8*frameInitialAlloc
// (2 MiB, a 1 MiB batch and its request around it) is copied once, its
// first chunk, as when the whole frame was allocated after it; a larger one
// at each doubling, under a copy of each byte in all.
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
	return readFrameSizeWithin(r, scratch, minFrameSize, max)
}

// readFrameSizeWithin is readFrameSize with a minimum of the caller's (a raw
// SASL token may be empty).
func readFrameSizeWithin(r io.Reader, scratch *[4]byte, minSize, max int32) (int32, error) {
	if _, err := io.ReadFull(r, scratch[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, errFrameTruncated
		}
		return 0, err
	}
	size := int32(binary.BigEndian.Uint32(scratch[:]))
	if size < minSize || size > max {
		return 0, &frameSizeError{size: size, max: max}
	}
	return size, nil
}

// nextFrameAlloc is the buffer for a frame of size bytes once the first
// have bytes, a full buffer, have arrived: twice as big, or the whole frame
// when that is at most eight times as big.
func nextFrameAlloc(have, size int) int {
	if size <= 8*have {
		return size
	}
	return 2 * have
}

// frameAccount is what a frame's buffer is charged to as it grows: the
// Server's byte budget, or nothing (take and give are no-ops on a nil one).
type frameAccount struct {
	budget *byteBudget
	charge frameCharge
	stop1  <-chan struct{}
	stop2  <-chan struct{}
	// deadline, when set, is the frame's read deadline, moved later by
	// the time spent waiting for budget: that wait is the server's, not
	// the client's.
	deadline *time.Time
}

// take charges n bytes, waiting for budget if it is spent; false means the
// wait was given up (the connection is closing).
func (a *frameAccount) take(n int) bool {
	if a == nil || a.budget == nil {
		return true
	}
	ok, waited := a.budget.take(&a.charge, int64(n), a.stop1, a.stop2)
	if waited > 0 && a.deadline != nil && !a.deadline.IsZero() {
		*a.deadline = a.deadline.Add(waited)
	}
	return ok
}

// give returns n bytes of the charge.
func (a *frameAccount) give(n int) {
	if a == nil || a.budget == nil {
		return
	}
	a.budget.give(&a.charge, int64(n))
}

// errBudgetWaitStopped reports a read given up while waiting for budget.
var errBudgetWaitStopped = errors.New("stopped waiting for request memory")

// readFrameBody reads exactly size bytes, growing its buffer as they
// arrive, each buffer charged to acct before it is taken. With a pool, the
// body lives in a pooled buffer (returned with it) that the caller gives
// back with put once nothing refers to the frame any more; without one, buf
// is nil and the frame is a fresh allocation. On error, every buffer is back
// in the pool; the caller releases what the charge still holds (budget
// granted while a wait was being given up).
func readFrameBody(r io.Reader, size int32, pool *framePool, acct *frameAccount) (frame []byte, buf *frameBuffer, err error) {
	n := int(size)
	want := min(n, frameInitialAlloc)
	cost := pool.allocSize(want)
	if !acct.take(cost) {
		return nil, nil, errBudgetWaitStopped
	}
	cur := pool.get(want)
	have := 0
	for {
		if err := readFull(r, cur.b[have:want]); err != nil {
			pool.put(cur)
			acct.give(cost)
			return nil, nil, err
		}
		have = want
		if have == n {
			if pool == nil {
				return cur.b[:n], nil, nil
			}
			return cur.b[:n], cur, nil
		}
		// The client is sending: grow, charging the new buffer before
		// taking it.
		want = nextFrameAlloc(have, n)
		nextCost := pool.allocSize(want)
		if !acct.take(nextCost) {
			pool.put(cur)
			acct.give(cost)
			return nil, nil, errBudgetWaitStopped
		}
		next := pool.get(want)
		copy(next.b, cur.b[:have])
		pool.put(cur)
		acct.give(cost)
		cur, cost = next, nextCost
	}
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
	frame, _, err := readFrameBody(r, size, nil, nil)
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

// allocSize is the bytes get(n) allocates: n's size class, or n itself for
// a frame too big to pool (or with no pool).
func (p *framePool) allocSize(n int) int {
	if p == nil {
		return n
	}
	c := frameClass(n)
	if c < 0 {
		return n
	}
	return 1 << (c + minFrameClassShift)
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
