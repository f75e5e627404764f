package node

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
)

// Automatic rebalancing (Config.AutoRebalance): placement puts a partition
// on the roster's top replicas by rendezvous hashing when it is created;
// once brokers join, or are decommissioned (the roster changes: a broker
// that is merely down stays in it, so a reboot moves nothing), the
// partitions whose replica set placement would now choose differently
// move there, by the same reassignment an operator asks for
// (reassign.go), the partition's leader carrying each out.
//
// One node starts them: the live broker of the lowest id in the roster
// (two for a moment while gossip disagrees), so the bound, RebalanceMaxMoves
// under way in the catalog, holds, and the topic entries, each one
// register in the catalog, are altered from one place. It takes the biggest
// first, as far as it knows sizes (the partitions it hosts; others count
// as empty). Pinned partitions (a manual assignment at create, or an
// operator's reassignment) never move; nor does a partition only for the
// order of its replicas, so no leadership churns for it.

// rebalanceEvery is how often a node looks for partitions to move
// (movesLoop, drain.go).
const rebalanceEvery = 2 * time.Second

// rebalance starts moves while fewer than the bound are under way, if
// this node is the one to.
func (n *Node) rebalance() {
	if n.agent.RebalancePaused() { // rebalance_pause.go
		return
	}
	if !n.startsMoves() {
		return // a lower live broker starts them (drain.go)
	}
	roster := n.agent.Roster()
	draining := map[int32]bool{}
	for _, e := range n.agent.DrainingBrokers() {
		draining[e.ID] = true
	}
	moving := 0
	for _, e := range n.agent.MovingTopics() {
		moving += len(e.Moves)
	}
	if moving >= n.cfg.RebalanceMaxMoves {
		return
	}
	type candidate struct {
		topic  string
		index  int32
		target []int32
		size   int64
	}
	var cands []candidate
	for _, e := range n.agent.Topics() {
		if e.ReplicationFactor < 2 || int(e.ReplicationFactor) > len(roster) {
			continue
		}
		if e.ReplicationFactor%2 == 0 {
			continue // even factors are served as they are, not moved (replication_factor.go)
		}
		pl := membership.PlaceTopic(e.Name, e.Partitions, roster, int(e.ReplicationFactor))
		for p := range e.Partitions {
			if e.IsPinned(p) {
				continue
			}
			if _, moving := e.Move(p); moving {
				continue
			}
			want, cur := pl[p], e.Replicas[p]
			if len(want) != len(cur) || len(cur) < 2 || sameSet(want, cur) {
				continue
			}
			if !n.liveMajority(cur) || slices.ContainsFunc(cur, func(b int32) bool { return draining[b] }) {
				// No leader to carry the move out, which would hold a
				// slot for good; or a drain's to move (drain.go), by the
				// smaller change that replaces the drained broker only.
				continue
			}
			if slices.ContainsFunc(want, func(b int32) bool { return !n.agent.IsAlive(b) }) {
				// A move onto a broker that is down would hold one of the
				// RebalanceMaxMoves slots until it came back: later.
				continue
			}
			c := candidate{e.Name, p, want, 0}
			if lp := n.hostedPartition(e.Name, p, TopicID(e.ID)); lp != nil {
				c.size = lp.replica.Size()
			}
			cands = append(cands, c)
		}
	}
	slices.SortStableFunc(cands, func(a, b candidate) int { return cmp.Compare(b.size, a.size) }) // the biggest first
	for _, c := range cands {
		if moving >= n.cfg.RebalanceMaxMoves {
			return
		}
		_, err := n.catalog.alter(c.topic, n.agent.AutoMove(c.index, c.target))
		fields := logrus.Fields{"topic": c.topic, "partition": c.index, "target": c.target, "bytes": c.size}
		switch {
		case err == nil:
			moving++
			n.log.WithFields(fields).Info("rebalance: moving a partition to where placement over the roster puts it")
		case errors.Is(err, membership.ErrPinned), errors.Is(err, membership.ErrTopicChanged):
		default:
			n.log.WithError(err).WithFields(fields).Warn("rebalance: could not start a move")
		}
	}
}

func sameSet(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
