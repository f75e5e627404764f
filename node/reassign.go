package node

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/replica"
)

// Reassignment: the catalog records a partition's target replica list
// (membership.PartitionMove, by AlterPartitionReassignments); the
// partition's Raft leader carries it out, a step per pass, each step
// decided afresh from the catalog's target and the group's configuration
// as the leader applied it, so a crash anywhere (of the leader, of the
// joining replica) resumes where the move stood, under whoever leads next:
//
//  1. a joint configuration left over is left (by a leader that stays);
//  2. learners the target does not name are removed (a move retargeted
//     or cancelled);
//  3. the target's new replicas are added as learners, one at a time
//     (their nodes open them, joining, when the catalog names them:
//     reconcile);
//  4. once every learner holds every committed entry, they are promoted
//     and the voters the target leaves out removed, in one change (joint
//     if more than one member changes), the leader excepted;
//  5. a leader the target leaves out hands leadership to a caught-up
//     voter of the target, whose node goes on;
//  6. once the voters are the target, the leader records the target as
//     the replica list, ending the move (membership.EndMove); the nodes
//     that are no longer replicas close theirs and quarantine the files
//     (reconcile: never deleted on a possibly stale view).
//
// Writes go on throughout: the group commits with its majority (both
// majorities while joint), and leadership moves at most once.

// reassignEvery is how often a node's leaders look at the moves under way.
const reassignEvery = 200 * time.Millisecond

// reassignStepTimeout bounds one configuration change's wait.
const reassignStepTimeout = 5 * time.Second

// reassign makes one step of every move whose partition this node leads.
func (n *Node) reassign(ctx context.Context) {
	for _, e := range n.agent.MovingTopics() {
		for _, m := range e.Moves {
			p := n.hostedPartition(e.Name, m.Partition, TopicID(e.ID))
			if p == nil || !p.Replica.Replicated() {
				continue
			}
			if _, ok := p.Replica.WritableEpoch(); !ok {
				continue
			}
			if n.moveHeld(p) { // rebalance_pause.go
				continue
			}
			sctx, cancel := context.WithTimeout(ctx, reassignStepTimeout)
			err := n.moveStep(sctx, p, m.Target)
			cancel()
			if err != nil && ctx.Err() == nil {
				l := n.log.WithError(err).WithFields(logrus.Fields{"topic": e.Name, "partition": m.Partition, "target": m.Target})
				if errors.Is(err, replica.ErrConfPending) || errors.Is(err, replica.ErrNotLeader) || errors.Is(err, replica.ErrOutcomeUnknown) {
					l.Debug("reassignment step: retrying")
				} else {
					l.Warn("reassignment step failed; retrying")
				}
			}
		}
	}
}

// moveStep makes the next step of p's move to target (see the top).
func (n *Node) moveStep(ctx context.Context, p *localPartition, target []int32) error {
	r, self := p.Replica, n.cfg.NodeID
	conf, ok := r.Conf()
	if !ok {
		return nil
	}
	fields := logrus.Fields{"topic": p.Topic, "partition": p.Index, "target": target}
	if conf.Joint() {
		if containsID(conf.Voters, self) {
			n.log.WithFields(fields).Info("reassignment: leaving the joint configuration")
			return r.LeaveJoint(ctx)
		}
		n.handOff(p, conf.Voters)
		return nil
	}
	for _, l := range conf.Learners {
		if !containsID(target, l) {
			n.log.WithFields(fields).WithField("broker", l).Info("reassignment: removing a learner the target no longer names")
			return r.ChangeConf(ctx, replica.ConfChange{Kind: replica.RemoveMember, Broker: l})
		}
	}
	for _, b := range target {
		if !containsID(conf.Voters, b) && !containsID(conf.Learners, b) {
			n.log.WithFields(fields).WithField("broker", b).Info("reassignment: adding a learner")
			err := r.ChangeConf(ctx, replica.ConfChange{Kind: replica.AddLearner, Broker: b})
			if err == nil {
				n.metrics.IncrCounter([]string{"rebalance", "replicas_added"}, 1) // rebalance_metrics.go
			}
			return err
		}
	}
	var leaving []int32
	for _, v := range conf.Voters {
		if !containsID(target, v) {
			leaving = append(leaving, v)
		}
	}
	if len(conf.Learners) > 0 {
		for _, l := range conf.Learners {
			if !r.CaughtUp(l) {
				return nil // the learner is still catching up
			}
		}
		var changes []replica.ConfChange
		for _, l := range conf.Learners {
			changes = append(changes, replica.ConfChange{Kind: replica.AddVoter, Broker: l})
		}
		for _, v := range leaving {
			if v != self {
				changes = append(changes, replica.ConfChange{Kind: replica.RemoveMember, Broker: v})
			}
		}
		n.log.WithFields(fields).WithField("promoted", conf.Learners).Info("reassignment: promoting the learners, removing the voters the target leaves out")
		return r.ChangeConf(ctx, changes...)
	}
	if len(leaving) > 0 {
		if containsID(leaving, self) {
			n.handOff(p, target)
			return nil
		}
		var changes []replica.ConfChange
		for _, v := range leaving {
			changes = append(changes, replica.ConfChange{Kind: replica.RemoveMember, Broker: v})
		}
		n.log.WithFields(fields).WithField("removed", leaving).Info("reassignment: removing the voters the target leaves out")
		return r.ChangeConf(ctx, changes...)
	}
	// The voters are the target: the move ends.
	var from []int32
	if spec, ok := n.catalog.Topic(p.Topic); ok && p.Index < spec.Partitions {
		from = spec.Replicas[p.Index]
	}
	if _, err := n.catalog.Alter(p.Topic, membership.EndMove(p.Index, target)); err != nil {
		return err
	}
	n.countMoveEnded(p, from, target) // rebalance_metrics.go
	n.log.WithFields(fields).Info("reassignment done: the target is the partition's replica list")
	return nil
}

// handOff asks the leader to hand leadership to the first of candidates
// that is a voter holding every committed entry.
func (n *Node) handOff(p *localPartition, candidates []int32) {
	conf, _ := p.Replica.Conf()
	for _, b := range candidates {
		if b != n.cfg.NodeID && slices.Contains(conf.Voters, b) && p.Replica.CaughtUp(b) {
			n.log.WithFields(logrus.Fields{"topic": p.Topic, "partition": p.Index, "to": b}).Info("reassignment: handing leadership off a leaving replica")
			p.Replica.TransferLeadership(b)
			return
		}
	}
}

// reassignLoop runs reassign every reassignEvery, and heal every
// healEvery passes, until ctx ends.
func (n *Node) reassignLoop(ctx context.Context) {
	t := time.NewTicker(reassignEvery)
	defer t.Stop()
	suspect := map[tp]int{}
	for pass := 1; ; pass++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n.reassign(ctx)
		if pass%healEvery == 0 {
			n.heal(ctx, suspect)
		}
	}
}

// healEvery is how many reassign passes apart heal looks.
const healEvery = 10

// heal brings the catalog and the groups this node leads back together
// where no move is recorded but the group's configuration is not the
// catalog's replica list: a move the catalog lost (the catalog merges a
// topic partition by partition, so concurrent alterations of different
// partitions both survive, but a move loses to a concurrent delete, to a
// newer change of its own partition, and to a whole-entry write by a node
// of the previous version) or a node that restarted mid-change. A joint configuration is left, learners
// are removed, and voters the catalog does not list are recorded as the
// replica list (Raft's configuration is what the group commits with). It
// acts on a mismatch seen twice in a row, not on a catalog a moment behind
// the leader's own change.
func (n *Node) heal(ctx context.Context, suspect map[tp]int) {
	specs := map[string]TopicSpec{}
	seen := map[tp]bool{}
	for _, p := range n.localPartitions() {
		if !p.Replica.Replicated() {
			continue
		}
		if _, ok := p.Replica.WritableEpoch(); !ok {
			continue
		}
		spec, ok := specs[p.Topic]
		if !ok {
			if spec, ok = n.catalog.Topic(p.Topic); !ok {
				continue
			}
			specs[p.Topic] = spec
		}
		if spec.ID != p.TopicID || p.Index >= spec.Partitions {
			continue
		}
		if _, moving := spec.Moves[p.Index]; moving {
			continue
		}
		conf, _ := p.Replica.Conf()
		cur := spec.Replicas[p.Index]
		if !conf.Joint() && len(conf.Learners) == 0 && sameSet(conf.Voters, cur) {
			continue
		}
		key := tp{p.Topic, p.Index}
		seen[key] = true
		if suspect[key]++; suspect[key] < 2 {
			continue
		}
		fields := logrus.Fields{"topic": p.Topic, "partition": p.Index, "replicas": cur, "voters": conf.Voters, "learners": conf.Learners}
		sctx, cancel := context.WithTimeout(ctx, reassignStepTimeout)
		var err error
		switch {
		case conf.Joint() && containsID(conf.Voters, n.cfg.NodeID):
			n.log.WithFields(fields).Warn("reassignment heal: leaving a joint configuration no move names")
			err = p.Replica.LeaveJoint(sctx)
		case conf.Joint():
			n.handOff(p, conf.Voters)
		case len(conf.Learners) > 0:
			n.log.WithFields(fields).Warn("reassignment heal: removing a learner no move names")
			err = p.Replica.ChangeConf(sctx, replica.ConfChange{Kind: replica.RemoveMember, Broker: conf.Learners[0]})
		default:
			voters := slices.Clone(conf.Voters)
			slices.SortStableFunc(voters, func(a, b int32) int { return rank(cur, a) - rank(cur, b) })
			n.log.WithFields(fields).Warn("reassignment heal: the catalog lost a move; recording the group's voters as the replica list")
			_, err = n.catalog.Alter(p.Topic, membership.AdoptReplicas(p.Index, voters))
		}
		cancel()
		if err != nil {
			n.log.WithError(err).WithFields(fields).Debug("reassignment heal: retrying")
		}
	}
	for k := range suspect {
		if !seen[k] {
			delete(suspect, k)
		}
	}
}

// rank is b's place in list, or past its end.
func rank(list []int32, b int32) int {
	if i := slices.Index(list, b); i >= 0 {
		return i
	}
	return len(list) + int(b)
}

// stillVoting tells whether p's Raft group still counts this node's
// replica, whatever the catalog says: it leads, or the leader's claim
// lists it among the group's voters. A replica the catalog no longer names is closed (and
// quarantined) only once the group no longer counts it: a move removes a
// replica from the group before it ends in the catalog, and a catalog
// that lost a move (see heal) must not take a voter out of a quorum. A removed replica never learns its removal was committed, so
// the leader's claim is what tells.
//
// The leader's claim lags a configuration change (it is republished on
// the change, then pulled by the peers), so a voter just promoted may be
// missing from it: a replica whose own configuration still names it a voter is
// kept until the claim has left it out for notVotingGrace. Called by
// reconcile (partitionVerdict), under the partition set's plan lock.
func (n *Node) stillVoting(p *localPartition) bool {
	key := tp{p.Topic, p.Index}
	if !p.Replica.Replicated() {
		return false
	}
	counted := p.Replica.IsLeader()
	if !counted {
		if c, ok := n.leaders.table.Lookup(p.TopicID, p.Index); ok && c.Leader != n.cfg.NodeID && n.agent.IsAlive(c.Leader) {
			// The leader's voters; the ISR only from a peer that
			// publishes none (an earlier version), though it leaves out
			// a voter that lags.
			if len(c.Voters) > 0 {
				counted = containsID(c.Voters, n.cfg.NodeID)
			} else {
				counted = containsID(c.ISR, n.cfg.NodeID)
			}
		} else {
			counted = true // no word from a live leader: it may still count
		}
	}
	if counted {
		delete(n.notVoting, key)
		return true
	}
	conf, _ := p.Replica.Conf()
	if !containsID(conf.Voters, n.cfg.NodeID) && !containsID(conf.VotersOutgoing, n.cfg.NodeID) {
		delete(n.notVoting, key)
		return false
	}
	if n.notVoting == nil {
		n.notVoting = map[tp]time.Time{}
	}
	since, ok := n.notVoting[key]
	if !ok {
		n.notVoting[key] = time.Now()
		return true
	}
	if time.Since(since) < notVotingGrace {
		return true
	}
	delete(n.notVoting, key)
	return false
}

// notVotingGrace is how long a replica that thinks itself a voter is kept
// after the catalog and the leader's claim both left it out.
var notVotingGrace = 15 * time.Second // a variable for tests
