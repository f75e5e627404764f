package node

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/moves"
)

// Draining a broker (membership/roster_drain.go records it in the roster):
// every partition with a replica on it moves to a target that replaces
// it with the next broker placement prefers over the roster without it,
// the other replicas kept in their order (the newcomer takes the drained
// broker's place, so the preferred leader changes only if it was the
// drained one). These are the ordinary moves of reassign.go, carried out
// by each partition's leader; pinned partitions are drained too (an
// operator asked for the broker to go) and stay pinned.
//
// Like automatic rebalancing, one node starts them, the live broker of
// the lowest id in the roster, at most RebalanceMaxMoves under way in the
// catalog, the biggest first as far as it knows sizes. A move starts only
// where it leaves the partition a majority of live voters before and
// after: the partition's leader must be able to commit each step, and a
// drained broker that is down is a voter that never votes. Once nothing
// names an operator's drained broker, the same node removes it from the
// roster (membership.Agent.FinishDrain); its replicas, if it is alive,
// are closed and quarantined by reconcile as for any move.
//
// With automatic rebalancing, a broker down longer than FailedBrokerGrace
// is drained the same way (an automatic drain), so its partitions return
// to full replication on the live brokers; the drain ends when it is
// back, an empty broker in the roster that rebalancing fills again. The
// time down is this node's own observation: a starter that restarts, or
// a new one, starts counting afresh (later, never sooner).

// drainEvery is how often the starting node looks at drains: often, so
// that a move that ended frees its slot for the next soon.
const drainEvery = 500 * time.Millisecond

// movesLoop starts the moves of drains and, with AutoRebalance, of
// rebalancing (rebalance.go), from one goroutine so the two never count
// the moves under way at once and start more than RebalanceMaxMoves.
func (n *Node) movesLoop(ctx context.Context) {
	t := time.NewTicker(drainEvery)
	defer t.Stop()
	down := map[int32]time.Time{}
	var lastRebalance time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n.cfg.AutoRebalance && time.Since(lastRebalance) >= rebalanceEvery {
			lastRebalance = time.Now()
			n.rebalance()
		}
		if !n.startsMoves() {
			clear(down) // another node counts, and will drain
			continue
		}
		n.endReturnedAutoDrains()
		if n.cfg.AutoRebalance {
			n.watchFailed(down)
		}
		n.drain()
	}
}

// startsMoves tells whether this node is the one to start moves: the
// live broker of the lowest id in the roster (a broker drained or
// removed is not).
func (n *Node) startsMoves() bool {
	roster := n.agent.Roster()
	if !slices.Contains(roster, n.cfg.NodeID) {
		return false
	}
	for _, id := range roster {
		if id < n.cfg.NodeID && n.agent.IsAlive(id) {
			return false
		}
	}
	return true
}

// endReturnedAutoDrains ends the automatic drain of brokers back alive,
// whatever this node's --auto-rebalance: the node that started a drain may
// be gone, and a broker left draining stays out of placement for good.
func (n *Node) endReturnedAutoDrains() {
	for _, e := range n.agent.DrainingBrokers() {
		if e.DrainAuto() && n.agent.IsAlive(e.ID) {
			if err := n.agent.EndAutoDrain(e.ID); err != nil {
				n.log.WithError(err).WithField("broker", e.ID).Warn("drain: could not end an automatic drain")
			}
		}
	}
}

// watchFailed drains the brokers down past the grace and ends the
// automatic drain of those back. down is when each was first seen down.
func (n *Node) watchFailed(down map[int32]time.Time) {
	roster := n.agent.Roster()
	live := 0
	for _, id := range roster {
		if n.agent.IsAlive(id) {
			live++
			delete(down, id)
		} else if _, ok := down[id]; !ok {
			down[id] = time.Now()
		}
	}
	for id := range down {
		if !slices.Contains(roster, id) {
			delete(down, id)
		}
	}
	if live <= len(roster)/2 {
		// This node may be the one cut off: the others look down from here.
		return
	}
	for id, since := range down {
		if time.Since(since) < n.cfg.FailedBrokerGrace {
			continue
		}
		if err := n.agent.AutoDrain(id); err != nil {
			n.log.WithError(err).WithField("broker", id).Warn("drain: could not record the drain of a failed broker")
			if errors.Is(err, membership.ErrMixedVersions) {
				down[id] = time.Now() // asked again after another grace, not every tick
			}
			continue
		}
		n.log.WithFields(logrus.Fields{"broker": id, "down": time.Since(since).Round(time.Second)}).Warn("drain: broker down past the failed-broker grace; moving its replicas to live brokers")
		delete(down, id)
	}
}

// drain starts the moves of the drained brokers' partitions while fewer
// than the bound are under way, and removes from the roster an operator's
// drained broker left empty. A broker already removed that a replica list
// still names (a topic placed by a node that had not yet heard of the
// drain, or a forced removal) is moved off the same way.
func (n *Node) drain() {
	draining := map[int32]bool{}
	for _, e := range n.agent.DrainingBrokers() {
		draining[e.ID] = true
	}
	pending := len(draining) > 0
	topics := n.agent.Topics()
	for _, e := range topics {
		for _, rs := range e.Replicas {
			for _, b := range rs {
				if !draining[b] && n.agent.Decommissioned(b) {
					draining[b] = true
				}
			}
		}
	}
	if len(draining) == 0 {
		return
	}
	limit := max(n.cfg.RebalanceMaxMoves, 1)
	moving := n.movesUnderWay()
	starts := moves.Drain(n.movesView(topics, draining))
	if n.agent.RebalancePaused() {
		// Paused (rebalance_pause.go): no move starts; a drain whose
		// moves are done still finishes below.
		starts = nil
	}
	for _, m := range starts {
		if moving >= limit {
			break
		}
		_, err := n.catalog.Alter(m.Topic, n.agent.DrainMove(m.Partition, nil, m.Target))
		fields := logrus.Fields{"topic": m.Topic, "partition": m.Partition, "target": m.Target, "bytes": m.Bytes}
		switch {
		case err == nil:
			moving++
			n.log.WithFields(fields).Info("drain: moving a partition off a drained broker")
		case errors.Is(err, membership.ErrTopicChanged):
		default:
			n.log.WithError(err).WithFields(fields).Warn("drain: could not start a move")
		}
	}
	if !pending {
		return
	}
	for _, e := range n.agent.DrainingBrokers() {
		done, err := n.agent.FinishDrain(e.ID)
		switch {
		case err != nil:
			n.log.WithError(err).WithField("broker", e.ID).Warn("drain: could not remove the drained broker from the roster")
		case done:
			n.log.WithField("broker", e.ID).Warn("drain: broker drained; removed from the roster")
		}
	}
}
