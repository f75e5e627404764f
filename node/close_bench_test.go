package node

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

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
		// Topics of at most 250 partitions: one request creating thousands
		// of replicated partitions outlasts the client's timeout here.
		adm := kadm.NewClient(newClient(b, nodes[0], kgo.RequestTimeoutOverhead(time.Minute)))
		type topicParts struct {
			name  string
			parts int32
		}
		var topics []topicParts
		for left, k := parts, 0; left > 0; k++ {
			tp := topicParts{fmt.Sprintf("close-bench-%d-%d", i, k), int32(min(left, 250))}
			left -= int(tp.parts)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			r, err := adm.CreateTopic(ctx, tp.parts, 3, nil, tp.name)
			cancel()
			if err != nil || r.Err != nil {
				fmt.Fprintf(os.Stderr, "create %s: %v %v %s\n", tp.name, err, r.Err, r.ErrMessage)
				b.Fatalf("create %s: %v %v", tp.name, err, r.Err)
			}
			topics = append(topics, tp)
		}
		retry.Run(b, 10*time.Minute, func() error {
			for _, tp := range topics {
				for p := range tp.parts {
					for _, n := range nodes {
						if n.parts.Get(tp.name, p) == nil {
							return fmt.Errorf("%s-%d not open on node %d", tp.name, p, n.NodeID())
						}
					}
					if _, err := partitionLeader(nodes, tp.name, p); err != nil {
						return err
					}
				}
			}
			return nil
		})
		victim := nodes[len(nodes)-1]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		b.StartTimer()
		start := time.Now()
		if err := victim.Shutdown(ctx); err != nil {
			b.Errorf("shutdown: %v", err)
		}
		b.StopTimer()
		cancel()
		took := time.Since(start)
		shutdown += took
		closing += victim.closeTook
		// Said at once: the benchmark's own report comes after the other
		// nodes stop.
		fmt.Fprintf(os.Stderr, "BenchmarkCloseReplicas: %d replicas: shutdown %v, closing partitions %v\n",
			parts, took.Round(time.Millisecond), victim.closeTook.Round(time.Millisecond))
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
