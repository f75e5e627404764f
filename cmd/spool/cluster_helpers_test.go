package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node"
	"github.com/spool-log/spool/node/nodetest"
)

// testCluster is in-process nodes with broker ids 1, 2, ..., joined by
// gossip to the first, for the CLI's cluster commands.
type testCluster struct {
	t     *testing.T
	nodes []*node.Node
}

// startCLICluster starts size nodes and waits until each sees them all
// alive in the roster.
func startCLICluster(t *testing.T, size int) *testCluster {
	c := &testCluster{t: t}
	for range size {
		c.add()
	}
	c.waitRoster(size)
	return c
}

// add starts the next node, joining the first; each option adjusts its
// config after that.
func (c *testCluster) add(options ...func(*node.Config)) *node.Node {
	id := int32(len(c.nodes) + 1)
	n := nodetest.Start(c.t, append([]func(*node.Config){func(cfg *node.Config) {
		cfg.NodeID = id
		if id > 1 {
			cfg.Gossip.Join = []string{c.nodes[0].Membership().Local().GossipAddr}
		}
	}}, options...)...)
	c.nodes = append(c.nodes, n)
	return n
}

// waitRoster waits until every node sees n brokers alive in the roster.
func (c *testCluster) waitRoster(n int) {
	c.t.Helper()
	retry.Run(c.t, 20*time.Second, func() error {
		for _, x := range c.nodes {
			if len(x.Membership().Roster()) < n || len(x.Membership().LiveBrokers()) < n {
				return fmt.Errorf("node %d sees %d brokers", x.NodeID(), len(x.Membership().LiveBrokers()))
			}
		}
		return nil
	})
}

// waitTopic waits until every node's catalog holds topic. A create is
// answered by the node that made it (franz-go sends it to the controller
// Metadata named, which can be any node); the others learn the topic by
// gossip a moment later, and a client's next request may go to any of them.
func (c *testCluster) waitTopic(topic string) {
	c.t.Helper()
	retry.Run(c.t, 20*time.Second, func() error {
		for _, x := range c.nodes {
			if _, ok := x.Membership().Topic(topic); !ok {
				return fmt.Errorf("node %d does not know topic %s", x.NodeID(), topic)
			}
		}
		return nil
	})
}
