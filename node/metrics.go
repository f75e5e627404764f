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
	n.access.FlushSecurityMetrics(n.metrics) // node/access
	n.coords.Txns.FlushMetrics(n.metrics)    // node/coord
	if n.mover != nil {
		n.mover.FlushMetrics() // node/moves
	}
	n.access.FlushQuotaMetrics(n.metrics)   // node/access
	n.coords.Shares.FlushMetrics(n.metrics) // node/share
	n.repl.CheckEvenFactors()               // node/replication's factor.go
	for _, p := range n.localPartitions() {
		bytes, records := p.ProducedBytes.Load(), p.ProducedRecords.Load()
		db, dr := bytes-p.FlushedBytes, records-p.FlushedRecords
		if db == 0 && dr == 0 {
			continue
		}
		p.FlushedBytes, p.FlushedRecords = bytes, records
		labels := []metrics.Label{{Name: "topic", Value: p.Topic}}
		n.metrics.IncrCounterWithLabels([]string{"produce", "bytes"}, float32(db), labels)
		n.metrics.IncrCounterWithLabels([]string{"produce", "records"}, float32(dr), labels)
	}
}
