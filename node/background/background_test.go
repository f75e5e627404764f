package background

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

// Every goroutine started in a Group ends when it stops, and Wait
// returns only once they all have; none starts after Stop.
func TestBackgroundOneLifetime(t *testing.T) {
	b := New()
	var ended, ticks atomic.Int32
	for range 3 {
		b.Go(func(ctx context.Context) {
			<-ctx.Done()
			ended.Add(1)
		})
	}
	b.Every(time.Millisecond, func() { ticks.Add(1) })
	retry.Run(t, 10*time.Second, func() error { return retry.Check(ticks.Load() >= 2, "ticks %d", ticks.Load()) })
	b.Stop()
	b.Wait()
	if got := ended.Load(); got != 3 {
		t.Fatalf("%d goroutines ended before Wait returned, want 3", got)
	}
	after := ticks.Load()
	if b.Go(func(context.Context) { t.Error("a goroutine ran after stop") }) {
		t.Fatal("Go after stop reported a start")
	}
	b.Wait()
	if ticks.Load() != after {
		t.Fatal("Every ticked after Wait returned")
	}
}
