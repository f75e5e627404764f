package replica

import (
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"
)

// Progress is how far a member's replica holds the log, as its leader
// tracks it: Offset is the Kafka offset after the last record it matched
// (the log start when it matched nothing the leader still holds), and
// Snapshot tells the leader is sending it a snapshot, whose records it
// copies outside Raft (the offset stands still until the copy lands).
type Progress struct {
	Offset   int64
	Snapshot bool
}

// MemberProgress is broker's progress, asked of the leader (ok false on a
// follower, for a broker outside the group, or for a single copy).
func (r *Replica) MemberProgress(broker int32) (Progress, bool) {
	g := r.rg
	if g == nil {
		return Progress{}, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.broken != nil {
		return Progress{}, false
	}
	st := g.rn.Status()
	if st.RaftState != raft.StateLeader {
		return Progress{}, false
	}
	pr, ok := st.Progress[RaftID(broker)]
	if !ok {
		return Progress{}, false
	}
	out := Progress{Snapshot: pr.State == tracker.StateSnapshot}
	off, err := g.st.NextOffset(pr.Match)
	if err != nil {
		off = r.log.StartOffset()
	}
	out.Offset = off
	return out, true
}
