package node

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

// BenchmarkCloseReplicas measures what a SIGTERM waits for on a node that
// holds many replicated partitions: three in-process nodes, a topic of
// SPOOL_BENCH_CLOSE_PARTITIONS partitions (default 60) of replication
// factor 3, every partition led and idle, then one node's Shutdown timed.
// It reports the shutdown and the part of it spent closing partitions:
//
//	SPOOL_BENCH_CLOSE_PARTITIONS=2000 go test ./node -run '^$' -bench BenchmarkCloseReplicas -benchtime 1x -timeout 30m
func BenchmarkCloseReplicas(b *testing.B) {
	parts := 60
	if s := os.Getenv("SPOOL_BENCH_CLOSE_PARTITIONS"); s != "" {
		var err error
		if parts, err = strconv.Atoi(s); err != nil || parts <= 0 {
			b.Fatalf("SPOOL_BENCH_CLOSE_PARTITIONS=%q", s)
		}
	}
	var shutdown, closing time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		nodes := startBenchCluster(b, 3)
		topic := fmt.Sprintf("close-bench-%d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		r, err := newAdmin(b, nodes[0]).CreateTopic(ctx, int32(parts), 3, nil, topic)
		cancel()
		if err != nil || r.Err != nil {
			b.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
		retry.Run(b, 10*time.Minute, func() error {
			for p := range int32(parts) {
				for _, n := range nodes {
					if n.partition(topic, p) == nil {
						return fmt.Errorf("partition %d not open on node %d", p, n.NodeID())
					}
				}
				if _, err := partitionLeader(nodes, topic, p); err != nil {
					return err
				}
			}
			return nil
		})
		victim := nodes[len(nodes)-1]
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Minute)
		b.StartTimer()
		start := time.Now()
		if err := victim.Shutdown(ctx); err != nil {
			b.Errorf("shutdown: %v", err)
		}
		b.StopTimer()
		cancel()
		shutdown += time.Since(start)
		closing += victim.closeTook
	}
	b.ReportMetric(shutdown.Seconds()/float64(b.N), "shutdown-s")
	b.ReportMetric(closing.Seconds()/float64(b.N), "close-partitions-s")
	b.ReportMetric(float64(closing.Microseconds())/float64(b.N)/float64(parts), "µs/replica")
}

// startBenchCluster is startCluster for a benchmark.
func startBenchCluster(b *testing.B, size int) []*Node {
	b.Helper()
	var nodes []*Node
	for id := 1; id <= size; id++ {
		cfg := testConfig(b, b.TempDir())
		cfg.NodeID = int32(id)
		if id > 1 {
			cfg.Gossip.Join = []string{nodes[0].Membership().Local().GossipAddr}
		}
		nodes = append(nodes, startNode(b, cfg))
	}
	retry.Run(b, 30*time.Second, func() error {
		for _, n := range nodes {
			if got := len(n.Membership().LiveBrokers()); got != size {
				return fmt.Errorf("node %d sees %d alive members, want %d", n.NodeID(), got, size)
			}
			if got := len(n.Membership().Roster()); got < size {
				return fmt.Errorf("node %d has %d brokers in its roster", n.NodeID(), got)
			}
		}
		return nil
	})
	return nodes
}
