package moves

// Reassignment: the catalog records a partition's target replica list
// (membership.PartitionMove, by AlterPartitionReassignments, a drain or
// rebalancing); the partition's Raft leader carries it out, a step per
// pass, each step decided afresh from the catalog's target and the group's
// configuration as the leader applied it, so a crash anywhere (of the
// leader, of the joining replica) resumes where the move stood, under
// whoever leads next:
//
//  1. a joint configuration left over is left (by a leader that stays);
//  2. learners the target does not name are removed (a move retargeted
//     or cancelled);
//  3. the target's new replicas are added as learners, one at a time
//     (their nodes open them, joining, when the catalog names them: the
//     node's reconcile);
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

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/replica"
)

// StepEvery is how often a node's leaders look at the moves under way.
const StepEvery = 200 * time.Millisecond

// stepTimeout bounds one configuration change's wait.
const stepTimeout = 5 * time.Second

// Step makes one step of every move whose partition this node leads.
func (m *Mover) Step(ctx context.Context) {
	for _, e := range m.cfg.Cluster.MovingTopics() {
		for _, mv := range e.Moves {
			p, ok := m.cfg.Hosted(e.Name, mv.Partition, e.ID)
			if !ok || !p.Replica.Replicated() {
				continue
			}
			if _, ok := p.Replica.WritableEpoch(); !ok {
				continue
			}
			if m.held(p) { // pause.go
				continue
			}
			sctx, cancel := context.WithTimeout(ctx, stepTimeout)
			err := m.step(sctx, p, mv.Target)
			cancel()
			if err != nil && ctx.Err() == nil {
				l := m.cfg.Log.WithError(err).WithFields(logrus.Fields{"topic": e.Name, "partition": mv.Partition, "target": mv.Target})
				if errors.Is(err, replica.ErrConfPending) || errors.Is(err, replica.ErrNotLeader) || errors.Is(err, replica.ErrOutcomeUnknown) {
					l.Debug("reassignment step: retrying")
				} else {
					l.Warn("reassignment step failed; retrying")
				}
			}
		}
	}
}

// step makes the next step of p's move to target (see the top).
func (m *Mover) step(ctx context.Context, p Hosted, target []int32) error {
	r, self := p.Replica, m.cfg.Self
	conf, ok := r.Conf()
	if !ok {
		return nil
	}
	fields := logrus.Fields{"topic": p.Topic, "partition": p.Index, "target": target}
	if conf.Joint() {
		if slices.Contains(conf.Voters, self) {
			m.cfg.Log.WithFields(fields).Info("reassignment: leaving the joint configuration")
			return r.LeaveJoint(ctx)
		}
		m.handOff(p, conf.Voters)
		return nil
	}
	for _, l := range conf.Learners {
		if !slices.Contains(target, l) {
			m.cfg.Log.WithFields(fields).WithField("broker", l).Info("reassignment: removing a learner the target no longer names")
			return r.ChangeConf(ctx, replica.ConfChange{Kind: replica.RemoveMember, Broker: l})
		}
	}
	for _, b := range target {
		if !slices.Contains(conf.Voters, b) && !slices.Contains(conf.Learners, b) {
			m.cfg.Log.WithFields(fields).WithField("broker", b).Info("reassignment: adding a learner")
			err := r.ChangeConf(ctx, replica.ConfChange{Kind: replica.AddLearner, Broker: b})
			if err == nil {
				m.cfg.Metrics.IncrCounter([]string{"rebalance", "replicas_added"}, 1) // metrics.go
			}
			return err
		}
	}
	var leaving []int32
	for _, v := range conf.Voters {
		if !slices.Contains(target, v) {
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
		m.cfg.Log.WithFields(fields).WithField("promoted", conf.Learners).Info("reassignment: promoting the learners, removing the voters the target leaves out")
		return r.ChangeConf(ctx, changes...)
	}
	if len(leaving) > 0 {
		if slices.Contains(leaving, self) {
			m.handOff(p, target)
			return nil
		}
		var changes []replica.ConfChange
		for _, v := range leaving {
			changes = append(changes, replica.ConfChange{Kind: replica.RemoveMember, Broker: v})
		}
		m.cfg.Log.WithFields(fields).WithField("removed", leaving).Info("reassignment: removing the voters the target leaves out")
		return r.ChangeConf(ctx, changes...)
	}
	// The voters are the target: the move ends.
	var from []int32
	if e, ok := m.cfg.Cluster.Topic(p.Topic); ok && p.Index < e.Partitions {
		from = e.Replicas[p.Index]
	}
	if err := m.cfg.Alter(p.Topic, membership.EndMove(p.Index, target)); err != nil {
		return err
	}
	m.countMoveEnded(p, from, target) // metrics.go
	m.cfg.Log.WithFields(fields).Info("reassignment done: the target is the partition's replica list")
	return nil
}

// handOff asks the leader to hand leadership to the first of candidates
// that is a voter holding every committed entry.
func (m *Mover) handOff(p Hosted, candidates []int32) {
	conf, _ := p.Replica.Conf()
	for _, b := range candidates {
		if b != m.cfg.Self && slices.Contains(conf.Voters, b) && p.Replica.CaughtUp(b) {
			m.cfg.Log.WithFields(logrus.Fields{"topic": p.Topic, "partition": p.Index, "to": b}).Info("reassignment: handing leadership off a leaving replica")
			p.Replica.TransferLeadership(b)
			return
		}
	}
}
