package node

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// A throttled copy of 1 MiB at 4 MiB/s takes about a quarter second, and
// two streams share the rate; an unthrottled one is not held back.
func TestCopyThrottle(t *testing.T) {
	th := newCopyThrottle(4 << 20)
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
	if _, err := (throttledWriter{context.Background(), &a, newCopyThrottle(0)}).Write(data); err != nil || time.Since(start) > time.Second {
		t.Errorf("unthrottled write: %v in %v", err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	slow := newCopyThrottle(1)
	if _, err := (throttledWriter{ctx, &a, slow}).Write(data); err == nil {
		t.Error("a throttled write went on after its context ended")
	}
}
