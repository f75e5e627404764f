package node

import (
	"context"
	"time"

	"github.com/hashicorp/go-metrics"

	"github.com/spool-log/spool/node/admin"
)

// The node counts its request-path metrics with atomics where they happen
// (node/admin/metrics.go says why); this loop hands them to go-metrics.

// metricsLoop hands the counted metrics to go-metrics until the node closes.
func (n *Node) metricsLoop(ctx context.Context) {
	t := time.NewTicker(admin.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return // Shutdown flushes once requests have drained
		case <-t.C:
		}
		n.flushMetrics()
	}
}

// flushMetrics emits what was counted since the last flush. Only this loop
// advances the flushed marks.
func (n *Node) flushMetrics() {
	out := n.stats.bytesOut.Load()
	if d := out - n.flushedBytesOut; d > 0 {
		n.metrics.IncrCounter([]string{"fetch", "bytes"}, float32(d))
	}
	n.flushedBytesOut = out
	for _, p := range n.localPartitions() {
		bytes, records := p.producedBytes.Load(), p.producedRecords.Load()
		db, dr := bytes-p.flushedBytes, records-p.flushedRecords
		if db == 0 && dr == 0 {
			continue
		}
		p.flushedBytes, p.flushedRecords = bytes, records
		labels := []metrics.Label{{Name: "topic", Value: p.topic}}
		n.metrics.IncrCounterWithLabels([]string{"produce", "bytes"}, float32(db), labels)
		n.metrics.IncrCounterWithLabels([]string{"produce", "records"}, float32(dr), labels)
	}
}
