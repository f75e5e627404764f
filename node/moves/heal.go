package moves

import (
	"context"
	"slices"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/replica"
)

// healEvery is how many step passes apart heal looks.
const healEvery = 10

// heal brings the catalog and the groups this node leads back together
// where no move is recorded but the group's configuration is not the
// catalog's replica list: a move the catalog lost (the catalog merges a
// topic partition by partition, so concurrent alterations of different
// partitions both survive, but a move loses to a concurrent delete, to a
// newer change of its own partition, and to a whole-entry write by a node
// of the previous version) or a node that restarted mid-change. A joint
// configuration is left, learners are removed, and voters the catalog does
// not list are recorded as the replica list (Raft's configuration is what
// the group commits with). It acts on a mismatch seen twice in a row, not
// on a catalog a moment behind the leader's own change.
func (m *Mover) heal(ctx context.Context, suspect map[key]int) {
	entries := map[string]membership.TopicEntry{}
	seen := map[key]bool{}
	for _, p := range m.cfg.AllHosted() {
		if !p.Replica.Replicated() {
			continue
		}
		if _, ok := p.Replica.WritableEpoch(); !ok {
			continue
		}
		e, ok := entries[p.Topic]
		if !ok {
			if e, ok = m.cfg.Cluster.Topic(p.Topic); !ok {
				continue
			}
			entries[p.Topic] = e
		}
		if e.ID != p.ID || p.Index >= e.Partitions {
			continue
		}
		if _, moving := e.Move(p.Index); moving {
			continue
		}
		conf, _ := p.Replica.Conf()
		cur := e.Replicas[p.Index]
		if !conf.Joint() && len(conf.Learners) == 0 && sameSet(conf.Voters, cur) {
			continue
		}
		k := key{p.Topic, p.Index}
		seen[k] = true
		if suspect[k]++; suspect[k] < 2 {
			continue
		}
		fields := logrus.Fields{"topic": p.Topic, "partition": p.Index, "replicas": cur, "voters": conf.Voters, "learners": conf.Learners}
		sctx, cancel := context.WithTimeout(ctx, stepTimeout)
		var err error
		switch {
		case conf.Joint() && slices.Contains(conf.Voters, m.cfg.Self):
			m.cfg.Log.WithFields(fields).Warn("reassignment heal: leaving a joint configuration no move names")
			err = p.Replica.LeaveJoint(sctx)
		case conf.Joint():
			m.handOff(p, conf.Voters)
		case len(conf.Learners) > 0:
			m.cfg.Log.WithFields(fields).Warn("reassignment heal: removing a learner no move names")
			err = p.Replica.ChangeConf(sctx, replica.ConfChange{Kind: replica.RemoveMember, Broker: conf.Learners[0]})
		default:
			voters := slices.Clone(conf.Voters)
			slices.SortStableFunc(voters, func(a, b int32) int { return rank(cur, a) - rank(cur, b) })
			m.cfg.Log.WithFields(fields).Warn("reassignment heal: the catalog lost a move; recording the group's voters as the replica list")
			err = m.cfg.Alter(p.Topic, membership.AdoptReplicas(p.Index, voters))
		}
		cancel()
		if err != nil {
			m.cfg.Log.WithError(err).WithFields(fields).Debug("reassignment heal: retrying")
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
