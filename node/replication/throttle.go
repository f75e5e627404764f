package replication

import (
	"context"
	"io"
	"sync"
	"time"
)

// CopyThrottle bounds the bytes per second this node serves to replicas
// copying a snapshot's records (a new replica of a reassignment, or a
// follower far behind), all streams together, and the Raft appends its
// leaders send to learners (the catch-up after the copy, Take), so a move
// does not take the disk and network from the partitions' own traffic
// (the node's Config.ReplicaCopyBytesPerSecond; 0 is no bound). Each write is
// scheduled after the bytes before it at the rate: the first goes at once.
type CopyThrottle struct {
	rate float64 // bytes per second
	mu   sync.Mutex
	next time.Time
}

func NewCopyThrottle(bytesPerSecond int64) *CopyThrottle {
	if bytesPerSecond <= 0 {
		return nil
	}
	return &CopyThrottle{rate: float64(bytesPerSecond)}
}

// wait returns when n more bytes may go, or ctx ends.
func (t *CopyThrottle) wait(ctx context.Context, n int) error {
	t.mu.Lock()
	now := time.Now()
	if t.next.Before(now) {
		t.next = now
	}
	at := t.next
	t.next = t.next.Add(time.Duration(float64(n) / t.rate * float64(time.Second)))
	t.mu.Unlock()
	d := time.Until(at)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// LearnerAhead is how far ahead of now the schedule may already be for
// Take to grant more: the Raft appends to learners it bounds
// (replica.DriverConfig.LearnerLimiter) are held back, not waited for,
// and raft offers a held one again about every heartbeat (200 ms at the
// default ticks); with less room than that the catch-up would run well
// below the rate. What it lets past the rate is at most this much of it.
const LearnerAhead = 500 * time.Millisecond

// Take schedules n bytes, without waiting, when the bytes already
// scheduled go out within LearnerAhead; it reports whether it did. The
// Raft appends to learners draw on it (replica.Limiter), the snapshot
// copies on wait: one budget for both.
func (t *CopyThrottle) Take(n int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if t.next.Before(now) {
		t.next = now
	}
	if t.next.Sub(now) > LearnerAhead {
		return false
	}
	t.next = t.next.Add(time.Duration(float64(n) / t.rate * float64(time.Second)))
	return true
}

// Ready tells whether the bytes scheduled go out within half of
// LearnerAhead, so that Take would grant the other half at least
// (replica.Limiter: a held learner resumes then). Half, not none: the
// snapshot copies drawing on the budget keep a chunk or so scheduled.
func (t *CopyThrottle) Ready() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.next.Sub(time.Now()) <= LearnerAhead/2
}

// copyChunk is the most a throttled write sends at once.
const copyChunk = 64 << 10

// throttledWriter writes through a CopyThrottle (nil: no bound).
type throttledWriter struct {
	ctx context.Context
	w   io.Writer
	t   *CopyThrottle
}

func (tw throttledWriter) Write(p []byte) (int, error) {
	if tw.t == nil {
		return tw.w.Write(p)
	}
	written := 0
	for len(p) > 0 {
		n := min(len(p), copyChunk)
		if err := tw.t.wait(tw.ctx, n); err != nil {
			return written, err
		}
		m, err := tw.w.Write(p[:n])
		written += m
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}
