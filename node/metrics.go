package node

import (
	"github.com/hashicorp/go-metrics"
)

// The node counts its request-path metrics with atomics where they happen
// (node/admin/metrics.go says why); flushMetrics hands them to go-metrics.

// flushMetrics emits what was counted since the last flush: every
// admin.FlushInterval while the node runs, and once more in Shutdown after
// requests have drained. Only one of these runs at a time; they alone
// advance the flushed marks.
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
