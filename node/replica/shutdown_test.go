package replica

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// stopForShutdown stops broker id as a node's shutdown does: its replica
// closed for the node's checkpoint, whose entry it returns.
func (c *raftCluster) stopForShutdown(id int32) ShutdownPoint {
	c.t.Helper()
	c.net.mu.Lock()
	delete(c.net.drivers, RaftID(id))
	c.net.mu.Unlock()
	c.drv[id].Stop()
	p, err := c.reps[id].CloseForShutdown()
	if err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	delete(c.reps, id)
	c.mu.Unlock()
	return p
}

// crash stops broker id as kill -9 would: its directory is left as it was
// at that instant, nothing closed or flushed beyond what was.
func (c *raftCluster) crash(id int32) {
	c.t.Helper()
	c.net.mu.Lock()
	delete(c.net.drivers, RaftID(id))
	c.net.mu.Unlock()
	c.drv[id].Stop()
	frozen := c.t.TempDir() + "/frozen"
	if err := os.CopyFS(frozen, os.DirFS(c.dirs[id])); err != nil {
		c.t.Fatal(err)
	}
	c.reps[id].Close() // its files only; the directory is replaced below
	c.mu.Lock()
	delete(c.reps, id)
	c.mu.Unlock()
	c.dirs[id] = frozen
}

// waitHW waits until every live replica's high watermark is hw.
func (c *raftCluster) waitHW(t *testing.T, hw int64) {
	t.Helper()
	retryUntil(t, func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		for id, r := range c.reps {
			if got := r.HighWatermark(); got != hw {
				return fmt.Errorf("replica %d high watermark %d, want %d", id, got, hw)
			}
		}
		return nil
	})
}

// TestShutdownPointsRestartAndCrash: every replica of a group stopped as a
// node's shutdown does (nothing written beside the logs); one restarted
// alone with its checkpoint entry serves up to where the group had
// committed at once, with no leader to tell it. Then the group, restarted
// without entries (as after a crash, the checkpoint being removed at
// start), takes more records, and a replica killed without a close
// recovers every acknowledged one.
func TestShutdownPointsRestartAndCrash(t *testing.T) {
	c := newRaftCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var acked []string
	for i := range 5 {
		val := fmt.Sprintf("v%d", i)
		if _, err := c.produce(ctx, val); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, val)
	}
	c.waitHW(t, 5)
	points := map[int32]*ShutdownPoint{}
	for _, id := range c.ids {
		p := c.stopForShutdown(id)
		if p.Commit == nil || p.Log.Offset != 5 {
			t.Fatalf("replica %d's shutdown point %+v: want the log end 5 and a commit point", id, p)
		}
		points[id] = &p
	}

	c.points = map[int32]*ShutdownPoint{1: points[1]}
	c.start(1)
	if got := c.reps[1].HighWatermark(); got != 5 {
		t.Fatalf("replica 1 restarted alone with its checkpoint entry: high watermark %d, want 5", got)
	}
	checkValues(t, c.reps[1], acked)

	// The others restart without entries: the group still agrees.
	c.points = nil
	c.start(0)
	c.start(2)
	for i := 5; i < 8; i++ {
		val := fmt.Sprintf("v%d", i)
		if _, err := c.produce(ctx, val); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, val)
	}
	c.waitHW(t, 8)

	// kill -9 of a replica opened from its checkpoint entry, after it took
	// more records: it recovers them without the entry, which the node
	// removed as it started.
	c.crash(1)
	c.start(1)
	c.waitHW(t, 8)
	for _, id := range c.ids {
		checkValues(t, c.reps[id], acked)
	}
}

// checkValues checks that r's committed batches hold want, in order.
func checkValues(t *testing.T, r *Replica, want []string) {
	t.Helper()
	got := readAll(t, r)
	if len(got) != len(want) {
		t.Fatalf("%d batches read, want %d", len(got), len(want))
	}
	for i, b := range got {
		if !bytes.Contains(b, []byte(want[i])) {
			t.Fatalf("batch %d does not hold %q", i, want[i])
		}
	}
}
