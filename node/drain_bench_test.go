package node

import (
	"context"
	"crypto/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
)

// TestDecommissionFigures measures a drain: four in-process nodes, a topic
// of 8 partitions and replication factor 3 filled with
// SPOOL_DRAIN_BENCH_MB megabytes (acks=all), then broker 4 decommissioned
// (default --rebalance-max-moves 2, no throttle): the time until it is out
// of the roster, with the partitions and bytes it held. Off unless
// SPOOL_DRAIN_BENCH_MB is set:
//
//	SPOOL_DRAIN_BENCH_MB=256 go test ./node -run TestDecommissionFigures -v
func TestDecommissionFigures(t *testing.T) {
	mb, _ := strconv.Atoi(os.Getenv("SPOOL_DRAIN_BENCH_MB"))
	if mb <= 0 {
		t.Skip("set SPOOL_DRAIN_BENCH_MB to measure a drain")
	}
	nodes := startCluster(t, 4)
	const topic = "drain-figures"
	startReplicatedTopic(t, nodes, topic, 8, 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedsOf(nodes)...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond), kgo.RetryTimeout(60*time.Second),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for i := 0; i < mb*1000; i++ {
		v := make([]byte, 1000)
		_, _ = rand.Read(v) // incompressible: the log holds what was sent
		cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	victim := nodes[3]
	var held int
	var bytes int64
	for _, p := range victim.parts.All() {
		if p.Topic == topic {
			held++
			bytes += p.Replica.Size()
		}
	}
	start := time.Now()
	if err := nodes[0].agent.Decommission(victim.NodeID(), false); err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 10*time.Minute, func() error {
		st := nodes[0].agent.DrainProgress(victim.NodeID())
		return retry.Check(st.State == "decommissioned", "%s: %d partitions left, %d moving", st.State, len(st.Partitions), st.Moving)
	})
	took := time.Since(start)
	t.Logf("drained %d partitions (%.0f MB) off broker %d in %v: %.1f MB/s", held, float64(bytes)/1e6, victim.NodeID(), took.Round(time.Millisecond), float64(bytes)/1e6/took.Seconds())
}
