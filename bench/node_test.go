package bench

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node"
)

// testNode starts an in-process node on free loopback ports, admitted.
func testNode(t testing.TB) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.KafkaAddr = "127.0.0.1:0"
	cfg.AdminAddr = "127.0.0.1:0"
	cfg.Gossip.BindAddr = "127.0.0.1:0"
	cfg.Gossip.Timings = "fast"
	log := logrus.New()
	log.SetOutput(io.Discard)
	cfg.Logger = log
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		n.Shutdown(ctx)
	})
	// Until it is admitted a node closes every Kafka connection.
	retry.Run(t, 20*time.Second, func() error {
		return retry.Check(n.Admitted(), "the test node is not admitted yet")
	})
	return n
}

// testContext bounds a test's bench runs.
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// load is the default produce load on topic, adjusted by change.
func load(topic string, change func(*ProduceLoad)) ProduceLoad {
	l := DefaultProduceLoad()
	l.Topic = topic
	if change != nil {
		change(&l)
	}
	return l
}

// records is how many records the node holds of topic, and in how many
// partitions.
func records(n *node.Node, topic string) (total int64, partitions int) {
	for _, p := range n.Stats().PartitionStats {
		if p.Topic == topic {
			partitions++
			total += p.EndOffset - p.StartOffset
		}
	}
	return total, partitions
}
