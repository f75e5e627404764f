package moves

import (
	"slices"
	"time"
)

// StillVoting tells whether p's Raft group still counts this node's
// replica, whatever the catalog says: it leads, or the leader's claim
// lists it among the group's voters. A replica the catalog no longer
// names is closed (and quarantined) only once the group no longer counts
// it: a move removes a replica from the group before it ends in the
// catalog, and a catalog that lost a move (heal) must not take a voter out
// of a quorum. A removed replica never learns its removal was committed,
// so the leader's claim is what tells.
//
// The leader's claim lags a configuration change (it is republished on
// the change, then pulled by the peers), so a voter just promoted may be
// missing from it: a replica whose own configuration still names it a
// voter is kept until the claim has left it out for NotVotingGrace.
// Called by the node's reconcile, under the partition set's plan lock,
// which guards what it remembers.
func (m *Mover) StillVoting(p Hosted) bool {
	k := key{p.Topic, p.Index}
	if !p.Replica.Replicated() {
		return false
	}
	counted := p.Replica.IsLeader()
	if !counted {
		if c, ok := m.cfg.Claim(p.ID, p.Index); ok && c.Leader != m.cfg.Self && m.cfg.Cluster.IsAlive(c.Leader) {
			// The leader's voters; the ISR only from a peer that
			// publishes none (an earlier version), though it leaves out
			// a voter that lags.
			if len(c.Voters) > 0 {
				counted = slices.Contains(c.Voters, m.cfg.Self)
			} else {
				counted = slices.Contains(c.ISR, m.cfg.Self)
			}
		} else {
			counted = true // no word from a live leader: it may still count
		}
	}
	if counted {
		delete(m.notVoting, k)
		return true
	}
	conf, _ := p.Replica.Conf()
	if !slices.Contains(conf.Voters, m.cfg.Self) && !slices.Contains(conf.VotersOutgoing, m.cfg.Self) {
		delete(m.notVoting, k)
		return false
	}
	since, ok := m.notVoting[k]
	if !ok {
		m.notVoting[k] = time.Now()
		return true
	}
	if time.Since(since) < NotVotingGrace {
		return true
	}
	delete(m.notVoting, k)
	return false
}

// NotVotingGrace is how long a replica that thinks itself a voter is kept
// after the catalog and the leader's claim both left it out.
var NotVotingGrace = 15 * time.Second // a variable for tests
