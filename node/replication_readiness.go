package node

import (
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/node/replica"
)

// Readiness and replication: /readyz says 503 while a replica that was
// open when the node started is a follower that has not yet caught up with
// its leader's commit point, so that a rolling restart waits for this node
// before taking down the next one (which could otherwise leave a partition
// without an up-to-date majority).
//
//   - Caught up: the replica's applied Raft index reached the leader's
//     commit index as the leader's messages told it (deliverRaft), once
//     since the node started; from then on it counts as caught up (a
//     follower under load is always a message behind, and /readyz must not
//     flap with it). A replica that leads, and a single copy, are caught up.
//   - Leader unknown: while neither the replica nor the leadership table
//     (a live leader's claim) names a leader, the replica holds readiness
//     only for leaderlessGrace after the node started: a live group makes
//     itself heard within an election or two. After that there is nobody
//     to catch up with, and holding the node unready would stall a rolling
//     restart on a partition it cannot mend (its vote may be what the group
//     needs to elect). Once a leader is known, by the replica or the table,
//     the replica holds readiness until it has caught up, however long.
//   - Only replicas open at startup hold readiness: a topic created later
//     opens followers behind a leader for a moment on every node, and
//     would make every node unready at once. Such replicas are still
//     counted by spool_replication_replicas_catching_up.

// catchUp is where a replica stands.
type catchUp int

const (
	caughtUp     catchUp = iota
	catchingUp           // a leader is known and the replica is behind it
	noLeaderYet          // no leader known, within the grace
	noLeaderGone         // no leader known past the grace: not held for
)

// leaderlessGrace is how long a replica with no known leader holds
// readiness after the node started: two of the longest randomized election
// timeouts (2 × ElectionTick ticks each).
func (n *Node) leaderlessGrace() time.Duration {
	cfg, def := n.cfg.Raft, replica.DefaultDriverConfig()
	tick, election := cfg.Tick, cfg.ElectionTick
	if tick <= 0 {
		tick = def.Tick
	}
	if election <= 0 {
		election = def.ElectionTick
	}
	return 2 * 2 * time.Duration(election) * tick
}

// checkCaughtUpLocked updates and returns where p's replica stands; leader
// is its State().Leader. Holds n.repl.mu.
func (n *Node) checkCaughtUpLocked(p *localPartition, tr *replicaTrack, leader int32) catchUp {
	r := p.Replica
	if tr.caughtUp {
		return caughtUp
	}
	if !r.Replicated() || leader == n.cfg.NodeID {
		tr.caughtUp = true
		return caughtUp
	}
	applied, _ := r.AppliedIndex()
	target, known := r.LeaderCommitHeard()
	tr.applied, tr.target = applied, target
	if known && leader >= 0 && applied >= target {
		tr.caughtUp = true
		n.log.WithFields(logrus.Fields{"topic": p.Topic, "partition": p.Index, "applied": applied, "leader_commit": target}).
			Debug("replica caught up with its leader")
		return caughtUp
	}
	if leader >= 0 || n.claimedLeader(p) {
		return catchingUp
	}
	if time.Since(n.repl.startup) < n.leaderlessGrace() {
		return noLeaderYet
	}
	return noLeaderGone
}

// claimedLeader tells whether the leadership table names another live
// replica of p as its leader.
func (n *Node) claimedLeader(p *localPartition) bool {
	if n.agent == nil {
		return false
	}
	c, ok := n.leaders.table.Lookup(p.TopicID, p.Index)
	if !ok || c.Leader == n.cfg.NodeID || !n.agent.IsAlive(c.Leader) {
		return false
	}
	for _, id := range p.Replica.Replicas() {
		if id == c.Leader {
			return true
		}
	}
	return false
}

// replicationReadiness is nil once every replica open at startup has
// caught up with its leader (or has had no leader past the grace), else
// why not.
func (n *Node) replicationReadiness() error {
	t := n.repl
	var behind, waiting int
	var first string
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range n.parts.All() {
		tr, ok := t.replicas[p.Replica]
		if !ok || !tr.startup || tr.caughtUp {
			continue
		}
		switch n.checkCaughtUpLocked(p, tr, p.Replica.Leader()) {
		case catchingUp:
			if behind == 0 && waiting == 0 {
				first = fmt.Sprintf("%s-%d at Raft index %d of its leader's commit %d", p.Topic, p.Index, tr.applied, tr.target)
			}
			behind++
		case noLeaderYet:
			if behind == 0 && waiting == 0 {
				first = fmt.Sprintf("%s-%d has heard from no leader yet", p.Topic, p.Index)
			}
			waiting++
		}
	}
	if behind+waiting == 0 {
		return nil
	}
	return fmt.Errorf("replicas catching up: %d behind their leader, %d waiting for one (%s)", behind, waiting, first)
}
