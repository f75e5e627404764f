package node

import (
	"context"
	"slices"
	"time"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/leadership"
	"github.com/spool-log/spool/node/replica"
)

// How leadership reaches every node (node/leadership): this node publishes
// a claim for each replica it leads, and merges its peers' claims into a
// table that Metadata, DescribeTopicPartitions and the KIP-951
// CurrentLeader of a NOT_LEADER_OR_FOLLOWER answer read.
const (
	// leadershipScan is how often the local replicas are asked whether
	// they lead besides when told: every membership change, and every
	// change of a Raft group's leader or ISR (leadershipChanged). Each scan
	// walks every local partition, so at 10,000 a scan twice a second was
	// most of an idle node's CPU; the periodic one is a safety net.
	leadershipScan = 5 * time.Second
	// leadershipScanGap spaces scans that are told of changes: a burst
	// (thousands of elections) is published in a few scans, not one each.
	leadershipScanGap = 100 * time.Millisecond
	// leadershipSync is how often peers' tags are compared with the table.
	leadershipSync = 250 * time.Millisecond
	// leadershipDrop is how long a gone or unreachable peer's claims stay.
	leadershipDrop = 3 * time.Second
)

type leaders struct {
	local *leadership.Local
	table *leadership.Table
	poke  chan struct{} // leadershipChanged's signal to the publisher
}

func newLeaders(self int32) *leaders {
	return &leaders{local: leadership.NewLocal(self), table: leadership.NewTable(), poke: make(chan struct{}, 1)}
}

// leadershipChanged has the publisher scan at once rather than at its next
// tick: whoever learns that a local replica gained or lost leadership
// (the replica driver, on a Raft leader change) calls it. Never blocks.
func (n *Node) leadershipChanged() {
	select {
	case n.leaders.poke <- struct{}{}:
	default:
	}
}

// startLeadershipLoops starts publishing this node's claims and pulling
// its peers'; both end when the node closes.
func (n *Node) startLeadershipLoops() {
	events, cancel := n.agent.Subscribe()
	syncer := leadership.NewSyncer(leadership.SyncConfig{
		Self: n.cfg.NodeID, Table: n.leaders.table, Members: n.agent.Members,
		Fetch:    n.peerFetchFunc,
		Interval: leadershipSync, DropAfter: leadershipDrop, Log: n.log,
	})
	n.loops.Go(syncer.Run)
	n.loops.Go(func(ctx context.Context) {
		defer cancel()
		t := time.NewTicker(leadershipScan)
		defer t.Stop()
		for {
			n.publishLeadership()
			select {
			case <-ctx.Done():
				return
			case <-time.After(leadershipScanGap):
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-n.leaders.poke:
			case _, ok := <-events:
				if !ok {
					events = nil // the agent shut down: ticks only
				}
			}
			// One scan answers every event that queued meanwhile (each
			// peer's tag update is one): scanning once per event fell
			// behind a burst and kept a 10,000-partition node busy.
			events = drainEvents(events)
		}
	})
}

// drainEvents takes the events queued on events: until none comes within
// a millisecond (the subscription hands its queue over one event at a
// time, so an empty select would stop after the first), for at most
// leadershipScanGap, so that a steady stream still gets its scans; nil
// once the channel closed.
func drainEvents(events <-chan membership.MemberEvent) <-chan membership.MemberEvent {
	if events == nil {
		return nil
	}
	quiet := time.NewTimer(time.Millisecond)
	defer quiet.Stop()
	for end := time.Now().Add(leadershipScanGap); time.Now().Before(end); {
		select {
		case _, ok := <-events:
			if !ok {
				return nil
			}
			quiet.Reset(time.Millisecond)
		case <-quiet.C:
			// The timer and an event may both be ready (a busy machine
			// runs this late): select would pick either, so the event
			// is looked for once more before the drain ends.
			select {
			case _, ok := <-events:
				if !ok {
					return nil
				}
				quiet.Reset(time.Millisecond)
			default:
				return events
			}
		}
	}
	return events
}

// publishLeadership sets this node's claims from its leading replicas and
// republishes its tag when they changed.
func (n *Node) publishLeadership() {
	var claims []leadership.Claim
	var led []*localPartition
	for _, p := range n.parts.All() {
		st := p.Replica.State()
		if st.Leader != n.cfg.NodeID || st.LeaderEpoch < 0 {
			continue
		}
		// The voters tell a replica the catalog no longer names whether
		// the group still counts it (stillVoting); the ISR leaves out a
		// voter that lags.
		var voters []int32
		if p.Replica.Replicated() {
			voters = p.Replica.Replicas()
			led = append(led, p)
		}
		claims = append(claims, leadership.Claim{Topic: p.TopicID, Partition: p.Index, Leader: st.Leader,
			Epoch: st.LeaderEpoch, ISR: st.ISR, Offline: st.Offline, Voters: voters})
	}
	if n.leaders.local.Set(claims) {
		if err := n.agent.SetLeadershipTag(n.leaders.local.Tag()); err != nil {
			n.log.WithError(err).Warn("publish leadership tag")
		}
	}
	n.markLed(led)
}

// partitionLeadership is the one answer to who leads a partition: partition
// index of spec's leader, leader epoch, ISR and offline replicas as every
// handler (Metadata, DescribeTopicPartitions, FindCoordinator, the
// CurrentLeader of produce and fetch errors, elections, moves,
// transactions) and the admin API report them: this node's replica where it
// leads; else the newest word among its replica's view (where it hosts the
// partition) and the leader's claim from the table, the claim winning a tie
// (in one epoch the leader knows the ISR, a follower only the leader); else
// the cluster view (leadership). alive tells the brokers gossip sees alive.
// Whether this node may serve the partition is its replica's word alone
// (leaderPartition).
func (n *Node) partitionLeadership(spec TopicSpec, index int32, alive func(int32) bool) replica.State {
	if p := n.parts.Current(spec.Name, index, spec.ID); p != nil {
		st := p.Replica.State()
		if st.Leader == n.cfg.NodeID {
			return st
		}
		if cl, ok := n.claimed(spec.ID, index, spec.Hosting(index), alive); ok && cl.LeaderEpoch >= st.LeaderEpoch {
			return cl
		}
		return st
	}
	if cl, ok := n.claimed(spec.ID, index, spec.Hosting(index), alive); ok {
		return cl
	}
	return n.cluster.Leadership(spec.Replicas[index], alive)
}

// leaderOf is partitionLeadership's leader; -1 for none.
func (n *Node) leaderOf(spec TopicSpec, index int32) int32 {
	return n.partitionLeadership(spec, index, n.agent.IsAlive).Leader
}

// currentLeader is partitionLeadership's leader and leader epoch of
// topic's partition index, for the CurrentLeader of produce and fetch
// errors (KIP-951); -1, -1 when it is unknown.
func (n *Node) currentLeader(topic string, index int32) (leader, epoch int32) {
	spec, ok := n.catalog.Topic(topic)
	if !ok || index < 0 || int(index) >= len(spec.Replicas) {
		return -1, -1
	}
	st := n.partitionLeadership(spec, index, n.agent.IsAlive)
	return st.Leader, st.LeaderEpoch
}

// claimed is the table's claim on a partition whose replicas are replicas.
// A claim is ignored when its leader is outside both the replicas and the
// voters it claims (a stale or bogus claim), or not alive: the table keeps
// a failed node's claims a moment in case it was only slow, but Metadata
// never names a leader that is not among the brokers it lists. A leader
// the catalog no longer names, whose group still counts it (stillVoting:
// a lost move), leads all the same until it hands leadership on, and
// clients must reach it.
func (n *Node) claimed(id TopicID, index int32, replicas []int32, alive func(int32) bool) (replica.State, bool) {
	c, ok := n.leaders.table.Lookup(id, index)
	if !ok || !alive(c.Leader) || (!slices.Contains(replicas, c.Leader) && !slices.Contains(c.Voters, c.Leader)) {
		return replica.State{}, false
	}
	return replica.State{Leader: c.Leader, LeaderEpoch: c.Epoch, ISR: c.ISR, Offline: c.Offline}, true
}
