package node

import (
	"context"
	"slices"
)

// Rebalancing metrics, from the moves this node's replicas lead (so the
// cluster's figure is the sum over its nodes), set at every flushMetrics:
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
// Bytes are the leader's estimate (admin.MoveProgress: offsets the leader
// matched on each new replica, as a share of its log's bytes).

func (n *Node) flushRebalanceMetrics() {
	if n.agent == nil {
		return
	}
	st := n.rebalanceStatus(context.Background(), true) // local: asks no peer
	var remaining, copied int64
	for _, m := range st.Moves {
		remaining += m.BytesToCopy - m.BytesCopied
		copied += m.BytesCopied
	}
	n.metrics.SetGauge([]string{"rebalance", "moving_partitions"}, float32(len(st.Moves)))
	n.metrics.SetGauge([]string{"rebalance", "bytes_remaining"}, float32(remaining))
	n.metrics.SetGauge([]string{"rebalance", "bytes_copied"}, float32(copied))
	// Counters are touched even at 0, so they are at /metrics before the
	// first move ends.
	for _, c := range []string{"bytes_moved", "replicas_added", "moves_completed", "moves_cancelled"} {
		n.metrics.IncrCounter([]string{"rebalance", c}, 0)
	}
	paused := float32(0)
	if st.Paused {
		paused = 1
	}
	n.metrics.SetGauge([]string{"rebalance", "paused"}, paused)
}

// countMoveEnded counts p's move, ended here on target having started
// from from: cancelled when target is from (CancelMove), else completed,
// with the bytes its new replicas copied (each holds p's log).
func (n *Node) countMoveEnded(p *localPartition, from, target []int32) {
	if slices.Equal(from, target) {
		n.metrics.IncrCounter([]string{"rebalance", "moves_cancelled"}, 1)
		return
	}
	n.metrics.IncrCounter([]string{"rebalance", "moves_completed"}, 1)
	added := 0
	for _, b := range target {
		if !slices.Contains(from, b) {
			added++
		}
	}
	n.metrics.IncrCounter([]string{"rebalance", "bytes_moved"}, float32(p.Replica.Size()*int64(added)))
}
