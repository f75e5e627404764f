package replica

import (
	"slices"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Throttling a learner's catch-up. A new replica copies the snapshot's
// records at the node's copy rate (DriverConfig.FetchSnapshot, throttled
// where the node serves it); what was written since the snapshot then
// comes as Raft appends, which raft sends as fast as the learner answers.
// A partition written fast during a long copy has that much more to send,
// and without a bound the move's last stretch takes the disk and network
// the copy throttle was set to leave to the partitions' own traffic.
//
// So a leader's appends carrying entries to a learner (a replica of the
// applied configuration that is not a voter, in neither half of a joint
// one) draw on LearnerLimiter, the budget the snapshot copies draw on:
//
//   - an append the budget cannot take now is not sent, nor any other to
//     that learner until the budget is ready again (Ready: most of what
//     it granted gone out). Nothing is queued (a held message would keep
//     its entries in memory);
//   - meanwhile the learner's answers (acknowledgements, heartbeat
//     answers) are held too, the latest acknowledgement kept: each answer
//     would have raft read and send another window of entries only to
//     have it held. A learner counts toward no quorum, so nothing but its
//     own catch-up waits on them;
//   - once ready, that acknowledgement is stepped and the learner
//     reported unreachable: raft probes it from what it acknowledged (the
//     appends the budget let through, which have had the while to arrive,
//     are not sent again) and resends what was held;
//   - from there raft sends a window, of which the budget takes what its
//     slack allows (Take) and holds the rest: a window is read for each
//     such share sent, so the window is bounded (MaxInflightBytes,
//     learnerInflightBytes when the driver has a limiter).
//
// Appends to voters, heartbeats and empty probes never wait, and a
// voter's answers are stepped at once: the partition's writes commit as
// fast as without a learner.

// Limiter bounds a flow of bytes; it never blocks.
type Limiter interface {
	// Take reports whether n more bytes may go now, and counts them if
	// so.
	Take(n int) bool
	// Ready tells whether a flow Take refused may resume: enough of
	// what was granted has gone out for Take to grant a good share
	// again. Not "all of it": snapshot copies drawing on the budget
	// keep some always scheduled.
	Ready() bool
}

// learnerInflightBytes bounds the appends in flight to one peer when the
// driver throttles learners: the window raft reads at each resume of a
// held learner. Far above what a voter has in flight (the transport
// queues 16 MiB per peer, all groups together), so it holds no voter back.
const learnerInflightBytes = 64 << 20

// holdForLearner tells whether m, about to be sent, is an append to a
// learner the limiter holds back; if so the learner's appends and answers
// are held until the limiter is ready. Called under g.mu.
func (g *raftGroup) holdForLearner(m *pb.Message) bool {
	lim := g.d.cfg.LearnerLimiter
	if lim == nil || m.GetType() != pb.MsgApp || len(m.GetEntries()) == 0 || !g.isLearner(m.GetTo()) {
		return false
	}
	n := 0
	for _, e := range m.GetEntries() {
		n += len(e.GetData())
	}
	if _, held := g.held[m.GetTo()]; !held && lim.Take(n) {
		g.d.learnerSent.Add(int64(n))
		return false
	}
	g.d.learnerHeld.Add(int64(n))
	if g.held == nil {
		g.held = map[uint64]*pb.Message{}
	}
	if _, held := g.held[m.GetTo()]; !held {
		g.held[m.GetTo()] = nil
	}
	return true
}

// deferForLearner tells whether m, an answer from a held learner, waits
// for the limiter to be ready; the latest acknowledgement is kept to be
// stepped then. Called under g.mu.
func (g *raftGroup) deferForLearner(m *pb.Message) bool {
	last, held := g.held[m.GetFrom()]
	if !held {
		return false
	}
	switch {
	case m.GetType() == pb.MsgHeartbeatResp:
		return true // the next heartbeat brings another
	case m.GetType() == pb.MsgAppResp && !m.GetReject():
		if last == nil || m.GetIndex() >= last.GetIndex() {
			g.held[m.GetFrom()] = m
		}
		return true
	}
	return false
}

// releaseLearners steps the held learners' deferred answers once the
// limiter is ready and has raft probe them from there, and forgets them
// when this replica no longer leads or they are no longer learners.
// Called under g.mu, at each round.
func (g *raftGroup) releaseLearners() {
	if len(g.held) == 0 {
		return
	}
	lim := g.d.cfg.LearnerLimiter
	leading := g.rn.BasicStatus().RaftState == raft.StateLeader
	ready := lim == nil || lim.Ready()
	for id, m := range g.held {
		if leading && !ready && g.isLearner(id) {
			continue
		}
		delete(g.held, id)
		if !leading {
			continue
		}
		if m != nil {
			_ = g.rn.Step(m)
		}
		g.rn.ReportUnreachable(id)
	}
}

// isLearner tells whether raft id is a learner of the applied
// configuration. Called under g.mu.
func (g *raftGroup) isLearner(id uint64) bool {
	return g.conf != nil && slices.Contains(g.conf.GetLearners(), id)
}

// LearnerBytes are the bytes of entries this node's leaders sent to
// learners under the limiter, and those the limiter held back to be sent
// again later (counted each time).
func (d *Driver) LearnerBytes() (sent, held int64) {
	return d.learnerSent.Load(), d.learnerHeld.Load()
}
