package node

import (
	"context"
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
// (reassign.go). Each node looks at the partitions it leads, the biggest
// first, and starts moves while fewer than RebalanceMaxMoves are under way
// in the catalog: a bound approximate by the gossip delay (two leaders may
// each start the last one). Pinned partitions (a manual assignment at
// create, or an operator's reassignment) never move; nor does a partition
// only for the order of its replicas, so no leadership churns for it.

// rebalanceEvery is how often a node looks for partitions to move.
const rebalanceEvery = 2 * time.Second

func (n *Node) rebalanceLoop(ctx context.Context) {
	if !n.cfg.AutoRebalance {
		return
	}
	t := time.NewTicker(rebalanceEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n.rebalance()
	}
}

// rebalance starts the moves this node's leaders owe, within the bound.
func (n *Node) rebalance() {
	moving := 0
	for _, e := range n.agent.MovingTopics() {
		moving += len(e.Moves)
	}
	if moving >= n.cfg.RebalanceMaxMoves {
		return
	}
	roster := n.agent.Roster()
	type candidate struct {
		topic  string
		index  int32
		target []int32
		size   int64
	}
	var cands []candidate
	entries := map[string]membership.TopicEntry{}
	placed := map[string][][]int32{}
	for _, p := range n.localPartitions() {
		if !p.replica.Replicated() {
			continue
		}
		if _, ok := p.replica.WritableEpoch(); !ok {
			continue
		}
		e, ok := entries[p.topic]
		if !ok {
			if e, ok = n.agent.Topic(p.topic); !ok {
				continue
			}
			entries[p.topic] = e
		}
		if TopicID(e.ID) != p.topicID || p.index >= e.Partitions || e.IsPinned(p.index) || int(e.ReplicationFactor) > len(roster) {
			continue
		}
		if _, moving := e.Move(p.index); moving {
			continue
		}
		pl, ok := placed[p.topic]
		if !ok {
			pl = membership.PlaceTopic(e.Name, e.Partitions, roster, int(e.ReplicationFactor))
			placed[p.topic] = pl
		}
		want, cur := pl[p.index], e.Replicas[p.index]
		if len(want) != len(cur) || sameSet(want, cur) {
			continue
		}
		cands = append(cands, candidate{p.topic, p.index, want, p.replica.Size()})
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		if a.size != b.size {
			if a.size > b.size {
				return -1
			}
			return 1
		}
		return 0
	})
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
