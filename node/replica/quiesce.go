package replica

import (
	"bytes"
	"slices"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Quiescence: an idle group stops ticking, so a node with thousands of
// partitions spends nothing on those nobody writes to (no heartbeats, no
// election timers), as CockroachDB's quiesced ranges.
//
// A leader quiesces, on a tick, when nothing is in flight (no proposal,
// no ConfirmLeader read), everything is committed and applied, every live
// replica (gossip) is in its ISR and holds its whole log, the ISR is a
// quorum, no transfer is under way, and it is the preferred replica or
// that one is down (else it stays awake to hand leadership back). It then has raft send a heartbeat
// (a ReadIndex, whose answer nobody waits for), which carries its commit
// index, sends each follower a quiesce marker right behind it (a
// heartbeat-typed message with quiesceCtx, handled by the driver and never
// stepped into raft: raft would echo its context, which it reads as its
// own), and stops ticking. A follower that gets the marker from its
// leader, in its term, holding exactly the log the leader commits, stops
// ticking too; one that does not stays awake, and its election timer
// wakes the leader with a pre-vote, which the leader (in its lease)
// refuses and answers with heartbeats.
//
// Anything but a heartbeat's answer wakes a group: a message, a proposal,
// a ConfirmLeader, a campaign or transfer, gossip's word that any replica
// failed, left or joined, and the transport's that the leader's
// connection ended (Driver.PeerLost). Asleep, a follower cannot notice its
// leader's death by its election timer: a process that died is seen by
// its connection closing (the timers then run and elect as usual), a
// machine that vanished by the connection going quiet or by gossip
// declaring it failed (memberFailed, which also starts the election at
// once).

// quiesceCtx marks the quiesce marker (and the ReadIndex that sends the
// heartbeat before it). Its length differs from ConfirmLeader's 8-byte
// contexts, so answerReads never mistakes one for the other.
var quiesceCtx = []byte("quiesce")

// quiesceEveryTicks is how often an awake leader checks whether it may
// sleep: an idle group sleeps within about that many ticks.
const quiesceEveryTicks = 3

// IsQuiesceHeartbeat tells whether m is a leader's quiesce marker: sent
// only when the follower holds everything the leader has, so the commit it
// carries is the leader's own (the node's catch-up tracking takes it as
// such).
func IsQuiesceHeartbeat(m *pb.Message) bool {
	return m.GetType() == pb.MsgHeartbeat && bytes.Equal(m.GetContext(), quiesceCtx)
}

// Asleep tells whether the replica's group is quiesced (false for a
// single copy, which has no group).
func (r *Replica) Asleep() bool { return r.rg != nil && r.rg.asleep.Load() }

// wakes tells whether what arrived for a round wakes the group: anything
// but answers to heartbeats and a leader's quiesce heartbeat.
func wakes(msgs []*pb.Message) bool {
	for _, m := range msgs {
		if m.GetType() != pb.MsgHeartbeatResp && !IsQuiesceHeartbeat(m) {
			return true
		}
	}
	return false
}

// maybeQuiesceLeader puts an idle leader to sleep (see above). Under mu,
// on a tick, before the round's Readys (which carry the heartbeat out):
// the state it checks is the previous round's, fully handled.
func (g *raftGroup) maybeQuiesceLeader() {
	if !g.quiescable() {
		return
	}
	g.rn.ReadIndex(quiesceCtx)
	g.quiescing = true
	g.asleep.Store(true)
}

// sendQuiesceMarkers sends each follower the marker, after the Ready's
// messages (the heartbeat) in the same round: a group's messages keep
// their order on the transport.
func (g *raftGroup) sendQuiesceMarkers(tr Transport) {
	bs := g.rn.BasicStatus()
	for _, b := range g.r.members() {
		if b == g.r.self {
			continue
		}
		tr.Send(g.key, &pb.Message{Type: pb.MsgHeartbeat.Enum(), To: new(RaftID(b)), From: new(g.self),
			Term: new(bs.GetTerm()), Commit: new(bs.GetCommit()), Context: quiesceCtx})
	}
}

func (g *raftGroup) quiescable() bool {
	if !g.writable.Load() || len(g.pending) > 0 || len(g.appended) > 0 || len(g.reads) > 0 || g.queued() {
		return false
	}
	if len(g.conf.GetLearners()) > 0 || len(g.conf.GetVotersOutgoing()) > 0 || len(g.confWaits) > 0 {
		return false // a learner catching up, or a move half done
	}
	if pref := g.r.members()[0]; pref != g.r.self && g.r.alive(pref) {
		return false // awake to hand leadership back (maybeTransfer)
	}
	st := g.rn.Status()
	if st.RaftState != raft.StateLeader || st.LeadTransferee != 0 || st.GetCommit() != g.applied {
		return false
	}
	last := st.Progress[g.self].Match
	if st.GetCommit() != last {
		return false
	}
	isr := g.isr.Load()
	if isr == nil {
		return false
	}
	inSync := 0
	for _, b := range g.r.members() {
		pr, ok := st.Progress[RaftID(b)]
		if !ok {
			return false
		}
		in := slices.Contains(*isr, b)
		// A replica gossip calls alive but the ISR left out (or the
		// reverse) is the ISR catching up with gossip: wait for it.
		if in != (b == g.r.self || g.r.alive(b)) {
			return false
		}
		if in {
			if pr.Match != last {
				return false
			}
			inSync++
		}
	}
	return inSync > len(g.r.members())/2
}

// maybeQuiesceFollower puts a follower to sleep on its leader's quiesce
// heartbeat hb when it holds exactly the log hb commits. Under mu, after
// the round's Readys.
func (g *raftGroup) maybeQuiesceFollower(hb *pb.Message) {
	bs := g.rn.BasicStatus()
	if bs.RaftState != raft.StateFollower || bs.Lead != hb.GetFrom() || bs.GetTerm() != hb.GetTerm() ||
		bs.GetCommit() != hb.GetCommit() || g.applied != bs.GetCommit() {
		return
	}
	if last, err := g.st.LastIndex(); err != nil || last != bs.GetCommit() {
		return
	}
	g.asleep.Store(true)
}

// wake asks the group to tick again (gossip's word on a replica).
func (g *raftGroup) wake() {
	g.inMu.Lock()
	g.wakeUp = true
	g.inMu.Unlock()
	g.w.kick(g)
}

// queued reports whether batches wait for the next round to propose them.
func (g *raftGroup) queued() bool {
	g.inMu.Lock()
	defer g.inMu.Unlock()
	return len(g.proposals) > 0
}
