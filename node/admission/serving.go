package admission

import (
	"context"
	"time"
)

// AnnounceServing tells gossip, once the node serves Kafka requests
// (admitted by the cluster, and ready: started), that it does, by calling
// announce (the agent's SetServing): its "sv" tag (membership/serving.go)
// makes `spool members` show it alive rather than joining, and only then,
// so that a script that waits for N alive members and then creates a topic
// of N replicas finds every one of them in Metadata, whichever node it
// asks. It returns without announcing if ctx ends first.
func (a *Admission) AnnounceServing(ctx context.Context, ready func() bool, announce func()) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !a.Admitted() || !ready() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	announce()
}
