package replica

import (
	"context"
	"fmt"
	"testing"

	"github.com/spool-log/spool/partition"
)

// BenchmarkProduceAcksAll: one producer, one batch in flight, acks=all, on
// a single copy (direct) and on three replicas in process (Raft, every
// append fsynced before it is acknowledged or sent).
func BenchmarkProduceAcksAll(b *testing.B) {
	val := batch(1700000000000, string(make([]byte, 1000)))
	b.Run("R=1", func(b *testing.B) {
		cfg := partition.DefaultConfig()
		cfg.Flush = partition.FlushEveryAppend
		log, err := partition.Open(b.TempDir(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		r := New(log, Config{Self: 0, Replicas: []int32{0}})
		defer r.Close()
		b.SetBytes(int64(len(val)))
		for b.Loop() {
			if _, err := r.Produce(context.Background(), val, AcksAll); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("R=3", func(b *testing.B) {
		c := newRaftCluster(b, 3)
		// Settled on the preferred replica first, so no hand-back runs
		// during the measurement.
		retryUntil(b, func() error {
			if !c.reps[0].IsLeader() {
				return fmt.Errorf("replica 0 not leading")
			}
			return nil
		})
		lead := c.leader()
		b.SetBytes(int64(len(val)))
		for b.Loop() {
			if _, err := lead.Produce(context.Background(), val, AcksAll); err != nil {
				b.Fatal(fmt.Errorf("leader %d: %w", lead.self, err))
			}
		}
	})
}
