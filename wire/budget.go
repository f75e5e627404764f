package wire

import (
	"sync"
	"sync/atomic"
	"time"
)

// byteBudget bounds the bytes of request frames a Server holds across all
// its connections: frames being read and requests read but not yet handled
// (Kafka's queued.max.request.bytes). A reader takes budget for a frame's
// buffer as the buffer grows with the bytes that actually arrive, and gives
// it back once the request has been handled, or dropped. When the budget is
// spent, readers wait, so their sockets are not read and their clients are
// held back by TCP, until memory is returned.
//
// Waiters are served in order, so a large frame is not starved by a stream
// of small ones. Frames hold budget while they wait for more, so budget
// alone could deadlock: frames that together hold all of it, each waiting
// for more, would wait for ever. When every frame that holds budget is
// waiting (none is being read from its socket or handled, so none will
// return any), the first waiter is allowed past the limit, and keeps that
// right until its request has been handled. One frame at a time, so the
// bound is the limit plus one request (MaxRequestBytes): that is also how a
// single frame larger than the limit is served, once it is alone.
type byteBudget struct {
	limit int64

	mu   sync.Mutex
	used int64
	// running counts frames that hold budget and are not waiting for more:
	// the ones that may still return some.
	running int
	waiters []*budgetWaiter
	// overdraft is the id of the frame allowed past the limit; 0 is none.
	overdraft uint64

	nextID atomic.Uint64
}

// budgetWaiter is a frame waiting for n more bytes.
type budgetWaiter struct {
	id     uint64
	n      int64
	holder bool // it held budget when it began waiting
	ready  chan struct{}
}

// frameCharge is what one frame holds in the budget. The reader owns it
// while reading, then the request that carries it until handled.
type frameCharge struct {
	id   uint64
	held int64
}

func newByteBudget(limit int64) *byteBudget {
	return &byteBudget{limit: limit}
}

// newCharge starts a frame's account, holding nothing.
func (b *byteBudget) newCharge() frameCharge {
	return frameCharge{id: b.nextID.Add(1)}
}

// take adds n bytes to c, waiting while the budget is spent, and says how
// long it waited. It gives up with false when a stop channel is closed;
// whatever was granted meanwhile is in c, to be given back with release like
// the rest.
func (b *byteBudget) take(c *frameCharge, n int64, stop1, stop2 <-chan struct{}) (ok bool, waited time.Duration) {
	b.mu.Lock()
	if c.id == b.overdraft || (len(b.waiters) == 0 && b.used+n <= b.limit) {
		if c.held == 0 {
			b.running++
		}
		b.used += n
		c.held += n
		b.mu.Unlock()
		return true, 0
	}
	start := time.Now()
	w := &budgetWaiter{id: c.id, n: n, holder: c.held > 0, ready: make(chan struct{})}
	if w.holder {
		b.running--
	}
	b.waiters = append(b.waiters, w)
	b.wakeLocked()
	b.mu.Unlock()

	select {
	case <-w.ready:
		c.held += n
		return true, time.Since(start)
	case <-stop1:
	case <-stop2:
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted as we gave up: c holds it until released
		c.held += n
		return false, time.Since(start)
	default:
	}
	for i, o := range b.waiters {
		if o == w {
			b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
			break
		}
	}
	if w.holder {
		b.running++ // it no longer waits; its owner releases it next
	}
	b.wakeLocked() // the head may have changed
	return false, time.Since(start)
}

// give returns n of the bytes c holds (a buffer replaced by a bigger one).
func (b *byteBudget) give(c *frameCharge, n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	c.held -= n
	if c.held == 0 {
		b.running--
		if b.overdraft == c.id {
			b.overdraft = 0
		}
	}
	b.wakeLocked()
	b.mu.Unlock()
}

// release returns all c holds; c must not be waiting.
func (b *byteBudget) release(c *frameCharge) {
	b.mu.Lock()
	if c.held > 0 {
		b.used -= c.held
		c.held = 0
		b.running--
	}
	if b.overdraft == c.id {
		b.overdraft = 0
	}
	b.wakeLocked()
	b.mu.Unlock()
}

// wakeLocked grants waiters in order while they fit, or the first one past
// the limit when nothing else could ever return budget.
func (b *byteBudget) wakeLocked() {
	for len(b.waiters) > 0 {
		w := b.waiters[0]
		if b.used+w.n > b.limit {
			if b.running > 0 || b.overdraft != 0 {
				return
			}
			b.overdraft = w.id
		}
		b.waiters[0] = nil
		b.waiters = b.waiters[1:]
		b.used += w.n
		b.running++ // a holder again, or for the first time
		close(w.ready)
	}
}

// inUse reports the bytes held now.
func (b *byteBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// waiting reports how many frames wait for budget.
func (b *byteBudget) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiters)
}
