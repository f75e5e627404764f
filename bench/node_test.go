package bench

import (
	"context"
	"testing"
	"time"

	"github.com/spool-log/spool/node"
	"github.com/spool-log/spool/node/nodetest"
)

// testNode starts an in-process node on free loopback ports, admitted.
func testNode(t testing.TB) *node.Node {
	t.Helper()
	return nodetest.Start(t)
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
