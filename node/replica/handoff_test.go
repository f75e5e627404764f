package replica

import (
	"context"
	"testing"
	"time"
)

// An acks=all append needs none of the leader's workers: the proposer
// runs the leader's round itself (append, appends sent), and the
// followers' answers are stepped where they arrive, committing and waking
// the producer. With the leader's driver stopped (no workers, no ticks)
// a produce still commits; before, it waited for a worker forever.
func TestRaftLeaderCommitsWithoutItsWorkers(t *testing.T) {
	c := newRaftCluster(t, 3)
	lead := c.leader()
	// Settled: the term's first entry committed everywhere, so nothing
	// but the produce below is left for a round.
	if _, err := c.produce(context.Background(), "warm"); err != nil {
		t.Fatal(err)
	}
	c.drv[lead.self].Stop()
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		info, err := lead.Produce(ctx, batch(1700000000000, "no worker"), AcksAll)
		cancel()
		if err != nil {
			t.Fatalf("produce %d with the leader's workers stopped: %v", i, err)
		}
		if hw := lead.HighWatermark(); hw <= info.LastOffset {
			t.Fatalf("produce %d acknowledged at offset %d, high watermark %d", i, info.LastOffset, hw)
		}
	}
}
