package node

import (
	"context"
	"crypto/rand"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
)

// TestReassignmentFigures measures a move: a partition holding
// SPOOL_MOVE_BENCH_MB megabytes (acks=all) moves onto a fourth node while
// a producer keeps writing; it reports the bytes moved per second and the
// producer's throughput during the move as a ratio of before it; with
// SPOOL_MOVE_BENCH_THROTTLE (bytes/s, Config.ReplicaCopyBytesPerSecond)
// the copy's rate as a fraction of it. Off unless SPOOL_MOVE_BENCH_MB is
// set:
//
//	SPOOL_MOVE_BENCH_MB=256 SPOOL_MOVE_BENCH_THROTTLE=20000000 go test ./node -run TestReassignmentFigures -v
func TestReassignmentFigures(t *testing.T) {
	mb, _ := strconv.Atoi(os.Getenv("SPOOL_MOVE_BENCH_MB"))
	if mb <= 0 {
		t.Skip("set SPOOL_MOVE_BENCH_MB to measure a move")
	}
	throttle, _ := strconv.ParseInt(os.Getenv("SPOOL_MOVE_BENCH_THROTTLE"), 10, 64)
	nodes := startClusterWith(t, 4, func(c *Config) { c.ReplicaCopyBytesPerSecond = throttle })
	const topic = "figures"
	spec := startReplicatedTopic(t, nodes, topic, 1, 3)
	cur := spec.Replicas[0]
	add := brokerOutside(nodes, cur)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedsOf(nodes)...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond), kgo.RetryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Incompressible values, so the log holds what was sent.
	random := func() []byte {
		v := make([]byte, 1000)
		_, _ = rand.Read(v)
		return v
	}
	fill := time.Now()
	for i := 0; i < mb*1000; i++ {
		cl.Produce(ctx, &kgo.Record{Value: random()}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("filled %d MB in %v", mb, time.Since(fill).Round(time.Millisecond))

	// A steady producer: records acknowledged per second before and
	// during the move.
	var acked atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: random()}).FirstErr(); err == nil {
				acked.Add(1)
			}
		}
	}()
	time.Sleep(3 * time.Second) // a measurement window, not a wait for a condition
	before := float64(acked.Load()) / 3
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, append(slices.Clone(cur[1:]), add))
	start := time.Now()
	startAcked := acked.Load()
	if rs, err := kadm.NewClient(cl).AlterPartitionAssignments(ctx, req); err != nil || rs.Error() != nil {
		t.Fatalf("reassign: %v %v", err, rs.Error())
	}
	byID := map[int32]*Node{}
	for _, n := range nodes {
		byID[n.NodeID()] = n
	}
	retry.Run(t, 10*time.Minute, func() error {
		s, _ := nodes[0].catalog.Topic(topic)
		return retry.Check(slices.Contains(s.Replicas[0], add) && len(s.Moves) == 0, "moving")
	})
	took := time.Since(start)
	during := float64(acked.Load()-startAcked) / took.Seconds()
	close(stop)
	<-done
	size := byID[add].parts.Get(topic, 0).Replica.Size()
	t.Logf("moved %d MB in %v: %.1f MB/s; acks=all produce %.0f records/s before, %.0f during (%.2f of before)",
		size>>20, took.Round(time.Millisecond), float64(size)/(1<<20)/took.Seconds(), before, during, during/before)
	if throttle > 0 {
		t.Logf("throttle %d bytes/s: the move ran at %.2f of it", throttle, float64(size)/took.Seconds()/float64(throttle))
	}
}
