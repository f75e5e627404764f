package node

import (
	"context"
	"slices"
	"sync"
)

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

// movedBytes is, per new replica of a move led here, the bytes it held
// when last seen, so bytes moved counts each byte once: a flush adds what
// the replicas gained since, the move's end what they gained after the
// last flush.
type movedBytes struct {
	mu   sync.Mutex
	seen map[movedKey]int64
}

func (n *Node) flushRebalanceMetrics() {
	if n.agent == nil {
		return
	}
	st := n.rebalanceStatus(context.Background(), true) // local: asks no peer
	var remaining, copied, moved int64
	n.moved.mu.Lock()
	seen := make(map[movedKey]int64, len(n.moved.seen))
	for _, m := range st.Moves {
		remaining += m.BytesToCopy - m.BytesCopied
		copied += m.BytesCopied
		for _, r := range m.NewReplicas {
			k := movedKey{m.Topic, m.Partition, r.Broker}
			was, ok := n.moved.seen[k]
			if !ok {
				// First seen here: a leader that took the move over
				// counts only what is copied from now on.
				was = r.Bytes
			}
			moved += max(r.Bytes-was, 0)
			seen[k] = max(r.Bytes, was)
		}
	}
	n.moved.seen = seen
	n.moved.mu.Unlock()
	n.metrics.SetGauge([]string{"rebalance", "moving_partitions"}, float32(len(st.Moves)))
	n.metrics.SetGauge([]string{"rebalance", "bytes_remaining"}, float32(remaining))
	n.metrics.SetGauge([]string{"rebalance", "bytes_copied"}, float32(copied))
	// Counters are touched even at 0, so they are at /metrics before the
	// first move.
	n.metrics.IncrCounter([]string{"rebalance", "bytes_moved"}, float32(moved))
	n.metrics.IncrCounter([]string{"rebalance", "moves_completed"}, 0)
	n.metrics.IncrCounter([]string{"rebalance", "moves_cancelled"}, 0)
	paused := float32(0)
	if st.Paused {
		paused = 1
	}
	n.metrics.SetGauge([]string{"rebalance", "paused"}, paused)
}

// countMoveEnded counts p's move, ended here on target having started
// from from: cancelled when target is from (CancelMove), else completed,
// its new replicas holding p's log.
func (n *Node) countMoveEnded(p *localPartition, from, target []int32) {
	if slices.Equal(from, target) {
		n.metrics.IncrCounter([]string{"rebalance", "moves_cancelled"}, 1)
		return
	}
	n.metrics.IncrCounter([]string{"rebalance", "moves_completed"}, 1)
	size := p.replica.Size()
	var moved int64
	n.moved.mu.Lock()
	for _, b := range target {
		if slices.Contains(from, b) {
			continue
		}
		k := movedKey{p.topic, p.index, b}
		if was, ok := n.moved.seen[k]; ok {
			moved += max(size-was, 0)
		}
		delete(n.moved.seen, k)
	}
	n.moved.mu.Unlock()
	n.metrics.IncrCounter([]string{"rebalance", "bytes_moved"}, float32(moved))
}
