package moves

import (
	"context"
	"slices"
)

// Rebalancing metrics, from the moves this node's replicas lead (so the
// cluster's figure is the sum over its nodes), set at every FlushMetrics:
//
//	spool_rebalance_moving_partitions  gauge: partitions led here with a move under way
//	spool_rebalance_bytes_remaining    gauge: bytes their new replicas have still to copy
//	spool_rebalance_bytes_copied       gauge: bytes their new replicas hold of what they copy
//	spool_rebalance_bytes_moved        counter: bytes the moves that completed here copied
//	                                   (the log's size per new replica, counted at the end)
//	spool_rebalance_replicas_added     counter: learners added here, each a copy of a log
//	                                   (one a retargeted or lost move removes again included)
//	spool_rebalance_moves_completed    counter: moves ended here on their target
//	spool_rebalance_moves_cancelled    counter: moves ended here back on the list they started from
//	spool_rebalance_paused             gauge: 1 while moves are paused cluster-wide
//
// Bytes are the leader's estimate (status.go: offsets the leader matched
// on each new replica, as a share of its log's bytes).

// FlushMetrics sets the gauges above (the node's metrics loop calls it).
func (m *Mover) FlushMetrics() {
	st := m.Status(context.Background(), true) // local: asks no peer
	var remaining, copied int64
	for _, mp := range st.Moves {
		remaining += mp.BytesToCopy - mp.BytesCopied
		copied += mp.BytesCopied
	}
	mt := m.cfg.Metrics
	mt.SetGauge([]string{"rebalance", "moving_partitions"}, float32(len(st.Moves)))
	mt.SetGauge([]string{"rebalance", "bytes_remaining"}, float32(remaining))
	mt.SetGauge([]string{"rebalance", "bytes_copied"}, float32(copied))
	// Counters are touched even at 0, so they are at /metrics before the
	// first move ends.
	for _, c := range []string{"bytes_moved", "replicas_added", "moves_completed", "moves_cancelled"} {
		mt.IncrCounter([]string{"rebalance", c}, 0)
	}
	paused := float32(0)
	if st.Paused {
		paused = 1
	}
	mt.SetGauge([]string{"rebalance", "paused"}, paused)
}

// countMoveEnded counts p's move, ended here on target having started
// from from: cancelled when target is from (CancelMove), else completed,
// with the bytes its new replicas copied (each holds p's log).
func (m *Mover) countMoveEnded(p Hosted, from, target []int32) {
	if slices.Equal(from, target) {
		m.cfg.Metrics.IncrCounter([]string{"rebalance", "moves_cancelled"}, 1)
		return
	}
	m.cfg.Metrics.IncrCounter([]string{"rebalance", "moves_completed"}, 1)
	added := 0
	for _, b := range target {
		if !slices.Contains(from, b) {
			added++
		}
	}
	m.cfg.Metrics.IncrCounter([]string{"rebalance", "bytes_moved"}, float32(p.Replica.Size()*int64(added)))
}
