package leadership

import (
	"slices"

	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/topics"
)

// Of is the one answer to who leads a partition: partition
// index of spec's leader, leader epoch, ISR and offline replicas as every
// handler (Metadata, DescribeTopicPartitions, FindCoordinator, the
// CurrentLeader of produce and fetch errors, elections, moves,
// transactions) and the admin API report them: this node's replica where it
// leads; else the newest word among its replica's view (where it hosts the
// partition) and the leader's claim from the table, the claim winning a tie
// (in one epoch the leader knows the ISR, a follower only the leader); else
// the cluster view (ClusterView). alive tells the brokers gossip sees alive.
// Whether this node may serve the partition is its replica's word alone
// (the node's leaderPartition).
func (l *Leaders) Of(spec topics.Spec, index int32, alive func(int32) bool) replica.State {
	if p := l.cfg.Hosted(spec.Name, index, spec.ID); p != nil {
		st := p.Replica.State()
		if st.Leader == l.cfg.Self {
			return st
		}
		if cl, ok := l.claimed(spec.ID, index, spec.Hosting(index), alive); ok && cl.LeaderEpoch >= st.LeaderEpoch {
			return cl
		}
		return st
	}
	if cl, ok := l.claimed(spec.ID, index, spec.Hosting(index), alive); ok {
		return cl
	}
	return l.cfg.ClusterView(spec, index, alive)
}

// LeaderOf is Of's leader, with gossip's brokers alive; -1 for none.
func (l *Leaders) LeaderOf(spec topics.Spec, index int32) int32 {
	return l.Of(spec, index, l.cfg.Alive).Leader
}

// Current is Of's leader and leader epoch of topic's partition index,
// for the CurrentLeader of produce and fetch errors (KIP-951); -1, -1
// when it is unknown.
func (l *Leaders) Current(topic string, index int32) (leader, epoch int32) {
	spec, ok := l.cfg.Topic(topic)
	if !ok || index < 0 || int(index) >= len(spec.Replicas) {
		return -1, -1
	}
	st := l.Of(spec, index, l.cfg.Alive)
	return st.Leader, st.LeaderEpoch
}

// claimed is the table's claim on a partition whose replicas are replicas.
// A claim is ignored when its leader is outside both the replicas and the
// voters it claims (a stale or bogus claim), or not alive: the table keeps
// a failed node's claims a moment in case it was only slow, but Metadata
// never names a leader that is not among the brokers it lists. A leader
// the catalog no longer names, whose group still counts it (the node's stillVoting:
// a lost move), leads all the same until it hands leadership on, and
// clients must reach it.
func (l *Leaders) claimed(id topics.TopicID, index int32, replicas []int32, alive func(int32) bool) (replica.State, bool) {
	c, ok := l.table.Lookup(id, index)
	if !ok || !alive(c.Leader) || (!slices.Contains(replicas, c.Leader) && !slices.Contains(c.Voters, c.Leader)) {
		return replica.State{}, false
	}
	return replica.State{Leader: c.Leader, LeaderEpoch: c.Epoch, ISR: c.ISR, Offline: c.Offline}, true
}
