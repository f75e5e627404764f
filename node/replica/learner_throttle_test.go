package replica

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-log/spool/partition"
)

// rateLimiter grants bytes at rate per second, scheduled one after the
// other, while what it granted goes out within ahead of now: the node's
// copy throttle's Take (node/replication/throttle.go), which this package cannot
// import.
type rateLimiter struct {
	rate  float64
	ahead time.Duration
	mu    sync.Mutex
	next  time.Time
}

func (l *rateLimiter) Take(n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if l.next.Before(now) {
		l.next = now
	}
	if l.next.Sub(now) > l.ahead {
		return false
	}
	l.next = l.next.Add(time.Duration(float64(n) / l.rate * float64(time.Second)))
	return true
}

func (l *rateLimiter) Ready() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next.Sub(time.Now()) <= l.ahead/2
}

// A learner cut off after its snapshot misses 3 MiB of acks=all writes;
// back, it catches up by Raft appends, which its leader sends under the
// limiter: at no more than the rate allows (the bound the limiter keeps,
// not a timing guess), with bytes held back on the way, while a producer
// goes on committing on the voters.
func TestRaftLearnerCatchUpIsThrottled(t *testing.T) {
	const rate = 1 << 20 // bytes per second
	const ahead = 500 * time.Millisecond
	c := newRaftClusterOpt(t, 3, partition.DefaultConfig(), func(id int32, cfg *DriverConfig) {
		cfg.LearnerLimiter = &rateLimiter{rate: rate, ahead: ahead}
	})
	ctx := context.Background()
	for i := range 10 {
		if _, err := c.produce(ctx, fmt.Sprint("v", i)); err != nil {
			t.Fatal(err)
		}
	}
	c.addLearner(t, 3)
	retryUntil(t, func() error {
		if r := c.writable(); r == nil || !r.CaughtUp(3) {
			return errors.New("learner 3 not caught up from its snapshot")
		}
		return nil
	})

	// Cut off, it misses 3 MiB the voters commit.
	c.net.mu.Lock()
	c.net.cut[RaftID(3)] = true
	c.net.mu.Unlock()
	const missed = 3 << 20
	value := strings.Repeat("x", 64<<10)
	for range missed / len(value) {
		if _, err := c.produce(ctx, value); err != nil {
			t.Fatal(err)
		}
	}
	lead := c.leader()
	target := lead.HighWatermark()
	if c.reps[3].HighWatermark() >= target {
		t.Fatal("the cut-off learner has the writes")
	}
	sent0, held0 := c.drv[lead.self].LearnerBytes()

	// Back: it catches up while a producer writes on.
	var acked atomic.Int64
	var slowest atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			if _, err := c.produce(ctx, fmt.Sprint("during", i)); err == nil {
				acked.Add(1)
				if d := int64(time.Since(start)); d > slowest.Load() {
					slowest.Store(d)
				}
			}
		}
	}()
	start := time.Now()
	c.net.mu.Lock()
	c.net.cut[RaftID(3)] = false
	c.net.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for c.reps[3].HighWatermark() < target {
		if time.Now().After(deadline) {
			t.Fatalf("learner 3 at %d after a minute, target %d", c.reps[3].HighWatermark(), target)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition whose time is the measurement
	}
	took := time.Since(start)
	close(stop)
	<-done
	sent1, held1 := c.drv[lead.self].LearnerBytes()
	sent, held := sent1-sent0, held1-held0
	t.Logf("caught up %d KiB in %v (%.2f of the %d KiB/s limit); %d KiB held back on the way; %d records acked meanwhile, slowest %v",
		sent>>10, took.Round(time.Millisecond), float64(sent)/took.Seconds()/rate, rate>>10, held>>10, acked.Load(), time.Duration(slowest.Load()).Round(time.Millisecond))
	if sent < missed {
		t.Fatalf("%d bytes sent to the learner under the limiter, want the %d it missed at least", sent, missed)
	}
	if held == 0 {
		t.Error("the limiter held nothing back")
	}
	// The limiter grants at most rate×(t + ahead) plus the message that
	// crosses the line (MaxSizePerMsg, or one entry).
	maxMsg := float64(DefaultDriverConfig().MaxSizePerMsg) + float64(len(value))
	if floor := time.Duration((float64(sent)-maxMsg)/rate*float64(time.Second)) - ahead; took < floor {
		t.Errorf("caught up %d bytes in %v, faster than the limit allows (%v)", sent, took, floor)
	}
	if acked.Load() < 3 {
		t.Errorf("only %d acks=all records committed while the learner caught up", acked.Load())
	}
}
