package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/spool-log/spool/partition"
)

// DeleteRecords on a replicated partition reaches every replica through
// the Raft log, at an offset inside a batch too; a follower that was down
// gets it with the snapshot. Every replica then starts at the offset asked
// and refuses reads below it, and holds the leader's bytes from there.
func TestRaftDeleteRecords(t *testing.T) {
	c := newRaftCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produce := func(n int) {
		t.Helper()
		for i := range n {
			for {
				_, err := c.leader().Produce(ctx, batch(1700000000000, fmt.Sprint(i), "x", "y"), AcksAll)
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					t.Fatal(err)
				}
			}
		}
	}
	produce(10) // offsets 0-29, three a batch
	lead := c.leader()
	if _, err := lead.DeleteRecordsBefore(ctx, lead.HighWatermark()+1); !errors.Is(err, partition.ErrOffsetOutOfRange) {
		t.Fatalf("delete above the high watermark: %v", err)
	}
	var follower *Replica
	for _, id := range c.ids {
		if id != lead.self {
			follower = c.reps[id]
		}
	}
	if _, err := follower.DeleteRecordsBefore(ctx, 3); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("delete on a follower: %v", err)
	}
	start, err := lead.DeleteRecordsBefore(ctx, 7)
	if err != nil || start != 7 {
		t.Fatalf("delete before 7: start %d, %v", start, err)
	}
	checkStart := func(want int64) {
		t.Helper()
		retryUntil(t, func() error {
			for id, r := range c.reps {
				if !c.alive(id) {
					continue
				}
				if r.LogStartOffset() != want {
					return fmt.Errorf("replica %d starts at %d, want %d", id, r.LogStartOffset(), want)
				}
			}
			return nil
		})
		for id, r := range c.reps {
			if _, err := r.log.Read(want-1, 1<<20, r.HighWatermark()); c.alive(id) && !errors.Is(err, partition.ErrOffsetOutOfRange) {
				t.Errorf("replica %d reads below its start %d: %v", id, want, err)
			}
		}
	}
	checkStart(7)

	down := follower.self
	c.stop(down)
	produce(10) // 30-59
	lead = c.leader()
	if _, err := lead.DeleteRecordsBefore(ctx, 44); err != nil {
		t.Fatal(err)
	}
	// The leader's Raft log now starts past the stopped replica's end.
	c.start(down)
	produce(1)
	lead = c.leader()
	retryUntil(t, func() error {
		if r := c.reps[down]; r.HighWatermark() != lead.HighWatermark() {
			return fmt.Errorf("replica %d at %d, the leader at %d", down, r.HighWatermark(), lead.HighWatermark())
		}
		return nil
	})
	checkStart(44)
	fb, lb := readAll(t, c.reps[down]), readAll(t, lead)
	if len(fb) == 0 || len(fb) != len(lb) {
		t.Fatalf("returned replica holds %d batches, the leader %d", len(fb), len(lb))
	}
	for i := range fb {
		if !bytes.Equal(fb[i], lb[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
}
