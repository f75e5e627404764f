package node

import (
	"errors"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/moves"
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
// this node is the one to; moves.Rebalance plans them.
func (n *Node) rebalance() {
	if n.agent.RebalancePaused() { // rebalance_pause.go
		return
	}
	if !n.startsMoves() {
		return // a lower live broker starts them (drain.go)
	}
	moving := n.movesUnderWay()
	if moving >= n.cfg.RebalanceMaxMoves {
		return
	}
	draining := map[int32]bool{}
	for _, e := range n.agent.DrainingBrokers() {
		draining[e.ID] = true
	}
	plan := moves.Rebalance(n.movesView(n.agent.Topics(), draining))
	for _, m := range plan {
		if moving >= n.cfg.RebalanceMaxMoves {
			return
		}
		_, err := n.catalog.Alter(m.Topic, n.agent.AutoMove(m.Partition, m.Target))
		fields := logrus.Fields{"topic": m.Topic, "partition": m.Partition, "target": m.Target, "bytes": m.Bytes}
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

// movesView is what the planners of package moves take: topics, the
// roster, liveness, the draining brokers, and the sizes of the partitions
// this node hosts (others count as empty).
func (n *Node) movesView(topics []membership.TopicEntry, draining map[int32]bool) moves.View {
	return moves.View{
		Topics: topics, Roster: n.agent.Roster(), Alive: n.agent.IsAlive, Draining: draining,
		Size: func(topic string, id membership.TopicID, p int32) int64 {
			if lp := n.hostedPartition(topic, p, id); lp != nil {
				return lp.Replica.Size()
			}
			return 0
		},
	}
}

// movesUnderWay counts the moves recorded in the catalog.
func (n *Node) movesUnderWay() int {
	moving := 0
	for _, e := range n.agent.MovingTopics() {
		moving += len(e.Moves)
	}
	return moving
}

// sameSet tells whether a and b hold the same brokers, in any order.
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
