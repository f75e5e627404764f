package client

import (
	"context"
	"testing"
	"time"

	"github.com/spool-log/spool/node"
	"github.com/spool-log/spool/node/nodetest"
)

// testCluster starts a node and returns a Config that reaches it.
func testCluster(t testing.TB, options ...func(*node.Config)) (Config, *node.Node) {
	t.Helper()
	n := nodetest.Start(t, options...)
	return Config{Brokers: n.KafkaAddr(), AdminAddr: n.AdminAddr(), Timeout: 5 * time.Second}, n
}

// testContext bounds a test's operations.
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mustCreate creates a topic of the given partitions, with configs.
func mustCreate(t testing.TB, g Config, topic string, partitions int32, configs ...string) {
	t.Helper()
	if _, err := g.CreateTopics(testContext(t), CreateTopicsOptions{Names: []string{topic}, Partitions: partitions, ReplicationFactor: -1, Configs: configs}); err != nil {
		t.Fatal(err)
	}
}

// nodetestStartJoined starts node 2, joined to first.
func nodetestStartJoined(t testing.TB, first *node.Node) *node.Node {
	t.Helper()
	return nodetest.Start(t, func(c *node.Config) {
		c.NodeID = 2
		c.Gossip.Join = []string{first.Membership().Local().GossipAddr}
	})
}
