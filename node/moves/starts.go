package moves

// Starting moves. Draining a broker (membership/roster_drain.go records it
// in the roster): every partition with a replica on it moves to a target
// that replaces it with the next broker placement prefers over the roster
// without it, the other replicas kept in their order (the newcomer takes
// the drained broker's place, so the preferred leader changes only if it
// was the drained one). Pinned partitions are drained too (an operator
// asked for the broker to go) and stay pinned.
//
// Automatic rebalancing (AutoRebalance): placement puts a partition on the
// roster's top replicas by rendezvous hashing when it is created; once
// brokers join, or are decommissioned (the roster changes: a broker that
// is merely down stays in it, so a reboot moves nothing), the partitions
// whose replica set placement would now choose differently move there.
// Pinned partitions (a manual assignment at create, or an operator's
// reassignment) never move; nor does a partition only for the order of its
// replicas, so no leadership churns for it.
//
// Both are the ordinary moves of step.go, carried out by each partition's
// leader. One node starts them, the live broker of the lowest id in the
// roster (two for a moment while gossip disagrees), at most MaxMoves under
// way in the catalog, the biggest first as far as it knows sizes (the
// partitions it hosts; others count as empty). A drain's move starts only
// where it leaves the partition a majority of live voters before and after
// (Drain): the leader must be able to commit each step, and a drained
// broker that is down is a voter that never votes. Once nothing names an
// operator's drained broker, the same node removes it from the roster
// (membership.Agent.FinishDrain); its replicas, if it is alive, are closed
// and quarantined by reconcile as for any move.
//
// With AutoRebalance, a broker down longer than FailedBrokerGrace is
// drained the same way (an automatic drain), so its partitions return to
// full replication on the live brokers; the drain ends when it is back, an
// empty broker in the roster that rebalancing fills again. The time down
// is this node's own observation: a starter that restarts, or a new one,
// starts counting afresh (later, never sooner).

import (
	"errors"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
)

// drainEvery is how often the starting node looks at drains: often, so
// that a move that ended frees its slot for the next soon.
const drainEvery = 500 * time.Millisecond

// rebalanceEvery is how often a node looks for partitions to move.
const rebalanceEvery = 2 * time.Second

// startsMoves tells whether this node is the one to start moves: the
// live broker of the lowest id in the roster (a broker drained or
// removed is not).
func (m *Mover) startsMoves() bool {
	c := m.cfg.Cluster
	roster := c.Roster()
	if !slices.Contains(roster, m.cfg.Self) {
		return false
	}
	for _, id := range roster {
		if id < m.cfg.Self && c.IsAlive(id) {
			return false
		}
	}
	return true
}

// StartRebalance starts moves while fewer than the bound are under way, if
// this node is the one to; Rebalance plans them.
func (m *Mover) StartRebalance() {
	c := m.cfg.Cluster
	if c.RebalancePaused() { // pause.go
		return
	}
	if !m.startsMoves() {
		return // a lower live broker starts them
	}
	moving := m.underWay()
	if moving >= m.cfg.MaxMoves {
		return
	}
	draining := map[int32]bool{}
	for _, e := range c.DrainingBrokers() {
		draining[e.ID] = true
	}
	for _, mv := range Rebalance(m.view(c.Topics(), draining)) {
		if moving >= m.cfg.MaxMoves {
			return
		}
		err := m.cfg.Alter(mv.Topic, c.AutoMove(mv.Partition, mv.Target))
		fields := logrus.Fields{"topic": mv.Topic, "partition": mv.Partition, "target": mv.Target, "bytes": mv.Bytes}
		switch {
		case err == nil:
			moving++
			m.cfg.Log.WithFields(fields).Info("rebalance: moving a partition to where placement over the roster puts it")
		case errors.Is(err, membership.ErrPinned), errors.Is(err, membership.ErrTopicChanged):
		default:
			m.cfg.Log.WithError(err).WithFields(fields).Warn("rebalance: could not start a move")
		}
	}
}

// endReturnedAutoDrains ends the automatic drain of brokers back alive,
// whatever this node's AutoRebalance: the node that started a drain may
// be gone, and a broker left draining stays out of placement for good.
func (m *Mover) endReturnedAutoDrains() {
	c := m.cfg.Cluster
	for _, e := range c.DrainingBrokers() {
		if e.DrainAuto() && c.IsAlive(e.ID) {
			if err := c.EndAutoDrain(e.ID); err != nil {
				m.cfg.Log.WithError(err).WithField("broker", e.ID).Warn("drain: could not end an automatic drain")
			}
		}
	}
}

// watchFailed drains the brokers down past the grace and ends the
// automatic drain of those back. down is when each was first seen down.
func (m *Mover) watchFailed(down map[int32]time.Time) {
	c := m.cfg.Cluster
	roster := c.Roster()
	live := 0
	for _, id := range roster {
		if c.IsAlive(id) {
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
		if time.Since(since) < m.cfg.FailedBrokerGrace {
			continue
		}
		if err := c.AutoDrain(id); err != nil {
			m.cfg.Log.WithError(err).WithField("broker", id).Warn("drain: could not record the drain of a failed broker")
			if errors.Is(err, membership.ErrMixedVersions) {
				down[id] = time.Now() // asked again after another grace, not every tick
			}
			continue
		}
		m.cfg.Log.WithFields(logrus.Fields{"broker": id, "down": time.Since(since).Round(time.Second)}).Warn("drain: broker down past the failed-broker grace; moving its replicas to live brokers")
		delete(down, id)
	}
}

// drain starts the moves of the drained brokers' partitions while fewer
// than the bound are under way, and removes from the roster an operator's
// drained broker left empty. A broker already removed that a replica list
// still names (a topic placed by a node that had not yet heard of the
// drain, or a forced removal) is moved off the same way.
func (m *Mover) drain() {
	c := m.cfg.Cluster
	draining := map[int32]bool{}
	for _, e := range c.DrainingBrokers() {
		draining[e.ID] = true
	}
	pending := len(draining) > 0
	topics := c.Topics()
	for _, e := range topics {
		for _, rs := range e.Replicas {
			for _, b := range rs {
				if !draining[b] && c.Decommissioned(b) {
					draining[b] = true
				}
			}
		}
	}
	if len(draining) == 0 {
		return
	}
	limit := max(m.cfg.MaxMoves, 1)
	moving := m.underWay()
	starts := Drain(m.view(topics, draining))
	if c.RebalancePaused() {
		// Paused (pause.go): no move starts; a drain whose moves are
		// done still finishes below.
		starts = nil
	}
	for _, mv := range starts {
		if moving >= limit {
			break
		}
		err := m.cfg.Alter(mv.Topic, c.DrainMove(mv.Partition, nil, mv.Target))
		fields := logrus.Fields{"topic": mv.Topic, "partition": mv.Partition, "target": mv.Target, "bytes": mv.Bytes}
		switch {
		case err == nil:
			moving++
			m.cfg.Log.WithFields(fields).Info("drain: moving a partition off a drained broker")
		case errors.Is(err, membership.ErrTopicChanged):
		default:
			m.cfg.Log.WithError(err).WithFields(fields).Warn("drain: could not start a move")
		}
	}
	if !pending {
		return
	}
	for _, e := range c.DrainingBrokers() {
		done, err := c.FinishDrain(e.ID)
		switch {
		case err != nil:
			m.cfg.Log.WithError(err).WithField("broker", e.ID).Warn("drain: could not remove the drained broker from the roster")
		case done:
			m.cfg.Log.WithField("broker", e.ID).Warn("drain: broker drained; removed from the roster")
		}
	}
}

// view is what the planners take: topics, the roster, liveness, the
// draining brokers, and the sizes of the partitions this node hosts
// (others count as empty).
func (m *Mover) view(topics []membership.TopicEntry, draining map[int32]bool) View {
	c := m.cfg.Cluster
	return View{
		Topics: topics, Roster: c.Roster(), Alive: c.IsAlive, Draining: draining,
		Size: func(topic string, id membership.TopicID, p int32) int64 {
			if h, ok := m.cfg.Hosted(topic, p, id); ok {
				return h.Replica.Size()
			}
			return 0
		},
	}
}

// underWay counts the moves recorded in the catalog.
func (m *Mover) underWay() int {
	moving := 0
	for _, e := range m.cfg.Cluster.MovingTopics() {
		moving += len(e.Moves)
	}
	return moving
}
