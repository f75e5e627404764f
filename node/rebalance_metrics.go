package node

import "context"

// Rebalancing metrics, from the moves this node's replicas lead (so the
// cluster's figure is the sum over its nodes), set at every flushMetrics:
//
//	spool_rebalance_moving_partitions  gauge: partitions led here with a move under way
//	spool_rebalance_bytes_remaining    gauge: bytes their new replicas have still to copy
//	spool_rebalance_bytes_copied       gauge: bytes their new replicas hold of what they copy
//	spool_rebalance_bytes_moved        counter: bytes the new replicas gained since the last flush
//	spool_rebalance_moves_completed    counter: moves ended here on their target
//	spool_rebalance_moves_cancelled    counter: moves ended here back on the list they started from
//	spool_rebalance_paused             gauge: 1 while moves are paused cluster-wide
//
// Bytes are the leader's estimate (admin.MoveProgress: offsets the leader
// matched on each new replica, as a share of its log's bytes).

// movedKey is one new replica of one move.
type movedKey struct {
	topic     string
	partition int32
	broker    int32
}

func (n *Node) flushRebalanceMetrics() {
	if n.agent == nil {
		return
	}
	st := n.rebalanceStatus(context.Background(), true) // local: asks no peer
	var remaining, copied int64
	seen := make(map[movedKey]int64, len(n.movedBytes))
	var moved int64
	for _, m := range st.Moves {
		remaining += m.BytesToCopy - m.BytesCopied
		copied += m.BytesCopied
		for _, r := range m.NewReplicas {
			k := movedKey{m.Topic, m.Partition, r.Broker}
			if was, ok := n.movedBytes[k]; ok && r.Bytes > was {
				moved += r.Bytes - was
			}
			seen[k] = max(r.Bytes, n.movedBytes[k])
		}
	}
	n.movedBytes = seen
	n.metrics.SetGauge([]string{"rebalance", "moving_partitions"}, float32(len(st.Moves)))
	n.metrics.SetGauge([]string{"rebalance", "bytes_remaining"}, float32(remaining))
	n.metrics.SetGauge([]string{"rebalance", "bytes_copied"}, float32(copied))
	n.metrics.IncrCounter([]string{"rebalance", "bytes_moved"}, float32(moved))
	n.metrics.IncrCounter([]string{"rebalance", "moves_completed"}, 0)
	n.metrics.IncrCounter([]string{"rebalance", "moves_cancelled"}, 0)
	paused := float32(0)
	if st.Paused {
		paused = 1
	}
	n.metrics.SetGauge([]string{"rebalance", "paused"}, paused)
}

// countMoveEnded counts a move this node's leader ended.
func (n *Node) countMoveEnded(cancelled bool) {
	name := "moves_completed"
	if cancelled {
		name = "moves_cancelled"
	}
	n.metrics.IncrCounter([]string{"rebalance", name}, 1)
}
