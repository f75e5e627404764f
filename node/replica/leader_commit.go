package replica

import (
	"sync/atomic"

	pb "go.etcd.io/raft/v3/raftpb"
)

// quietBeats heartbeats with no append between make a heartbeat's commit
// the leader's (leaderCommit): about two seconds at the default ticks.
const quietBeats = 10

// leaderCommit is the leader's commit index as a follower heard it. A
// MsgApp (and a MsgSnap) carries the leader's commit index itself; a
// heartbeat carries min(what the leader knows the follower holds, its
// commit), which is the commit index only once the leader has nothing
// more to send. A leader that lost a follower (a restart) probes it with
// an append after its first heartbeat's answer, so heartbeats alone are
// taken for the leader's word only after quietBeats of them with no
// append between: a loaded follower may answer a heartbeat after the next
// one arrives, so two were not enough (seen under -race).
//
// Written by the transport's readers (Driver.Deliver), read by anyone:
// atomics, no lock.
type leaderCommit struct {
	app        atomic.Uint64
	appSeen    atomic.Bool
	beat       atomic.Uint64
	beatsQuiet atomic.Int32 // heartbeats since the last append
}

// note learns what a message from the leader says of its commit index.
func (lc *leaderCommit) note(m *pb.Message) {
	switch m.GetType() {
	case pb.MsgApp:
		raise(&lc.app, m.GetCommit())
		lc.appSeen.Store(true)
		lc.beatsQuiet.Store(0)
	case pb.MsgSnap:
		raise(&lc.app, m.GetSnapshot().GetMetadata().GetIndex())
		lc.appSeen.Store(true)
		lc.beatsQuiet.Store(0)
	case pb.MsgHeartbeat:
		raise(&lc.beat, m.GetCommit())
		if IsQuiesceHeartbeat(m) {
			// Sent only once the follower holds the leader's whole
			// log: its commit is the leader's, and no more heartbeats
			// follow while the group sleeps.
			lc.beatsQuiet.Store(quietBeats)
			return
		}
		lc.beatsQuiet.Add(1)
	}
}

// target is the leader's commit index as far as it is known.
func (lc *leaderCommit) target() (uint64, bool) {
	target, known := lc.app.Load(), lc.appSeen.Load()
	if lc.beatsQuiet.Load() >= quietBeats {
		target, known = max(target, lc.beat.Load()), true
	}
	return target, known
}

func raise(a *atomic.Uint64, v uint64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// LeaderCommitHeard is the leader's commit index as this replica last
// heard it from the leader's messages, and whether it is known yet: what
// a follower must apply to have caught up (the node's /readyz). A single
// copy knows none.
func (r *Replica) LeaderCommitHeard() (uint64, bool) {
	if r.rg == nil {
		return 0, false
	}
	return r.rg.heard.target()
}
