package replication

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// A throttled copy of 1 MiB at 4 MiB/s takes about a quarter second, and
// two streams share the rate; an unthrottled one is not held back.
func TestCopyThrottle(t *testing.T) {
	th := NewCopyThrottle(4 << 20)
	data := make([]byte, 1<<20)
	var a, b bytes.Buffer
	start := time.Now()
	done := make(chan error, 2)
	for _, w := range []*bytes.Buffer{&a, &b} {
		go func() {
			_, err := throttledWriter{context.Background(), w, th}.Write(data)
			done <- err
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)
	if a.Len() != len(data) || b.Len() != len(data) {
		t.Fatalf("wrote %d and %d bytes", a.Len(), b.Len())
	}
	// 2 MiB at 4 MiB/s: half a second, less the first chunk that goes
	// at once.
	if took < 450*time.Millisecond || took > 3*time.Second {
		t.Errorf("2 MiB at 4 MiB/s took %v", took)
	}
	start = time.Now()
	if _, err := (throttledWriter{context.Background(), &a, NewCopyThrottle(0)}).Write(data); err != nil || time.Since(start) > time.Second {
		t.Errorf("unthrottled write: %v in %v", err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	slow := NewCopyThrottle(1)
	if _, err := (throttledWriter{ctx, &a, slow}).Write(data); err == nil {
		t.Error("a throttled write went on after its context ended")
	}
}

// The Raft appends to learners draw on the copy's budget without waiting
// (Take): granted while what was granted goes out within LearnerAhead,
// refused beyond; Ready once half of it has gone; and a copy waits behind
// them.
func TestCopyThrottleTake(t *testing.T) {
	const rate = 4 << 20
	th := NewCopyThrottle(rate)
	if !th.Ready() {
		t.Fatal("a new throttle is not ready")
	}
	granted := 0
	for th.Take(256 << 10) {
		granted += 256 << 10
		if granted > 64<<20 {
			t.Fatal("Take never refuses")
		}
	}
	// LearnerAhead of the rate, plus the grant that crossed it.
	if limit := int(rate*LearnerAhead.Seconds()) + 256<<10; granted > limit || granted < limit-256<<10 {
		t.Errorf("granted %d bytes at once, want about %d", granted, limit)
	}
	if th.Ready() {
		t.Error("ready with a full slack scheduled")
	}
	start := time.Now()
	var buf bytes.Buffer
	if _, err := (throttledWriter{context.Background(), &buf, th}).Write(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	// The copy went after the granted bytes: their time at the rate,
	// less the margin a timer may fire early by.
	if took, want := time.Since(start), time.Duration(float64(granted)/rate*float64(time.Second)); took < want-50*time.Millisecond {
		t.Errorf("a copy behind %d granted bytes went after %v, want about %v", granted, took, want)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !th.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("never ready again")
		}
		time.Sleep(10 * time.Millisecond) // the schedule's own clock is the condition
	}
	if !th.Take(1) {
		t.Error("a ready throttle refuses")
	}
}
