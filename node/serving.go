package node

import (
	"context"
	"time"
)

// announceServing tells gossip, once this node serves Kafka requests
// (admitted by the cluster, started), that it does: its "sv" tag
// (membership/serving.go) makes `spool members` show it alive rather than
// joining, and only then, so that a script that waits for N alive members
// and then creates a topic of N replicas finds every one of them in
// Metadata, whichever node it asks.
func (n *Node) announceServing(ctx context.Context) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !n.adm.Admitted() || !n.ready.Load() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	n.agent.SetServing()
}
