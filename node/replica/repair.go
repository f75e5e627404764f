package replica

import (
	"slices"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"
)

// Rebuilding a damaged replica from its peers (node/hosted's repair.go)
// throws its log away and rejoins with none, so what it held must be held
// by enough of the others first: every entry the group committed is on a
// majority, and that majority may have counted the damaged replica. Only
// the leader knows how far each member holds the log, so the damaged
// replica asks it (CaughtUpWithout), once it has stopped acknowledging
// anything itself: an entry committed after the answer was then committed
// by the others alone.

// Fence marks the replica damaged, to be rebuilt: it no longer takes
// leadership handed to it (a preferred replica's handback) nor campaigns
// on gossip's hint, so that once it has handed leadership over it stays
// a follower until it is closed. Raft's own election timeout still makes
// it a candidate if the group loses its leader: a damaged replica's vote
// and its intact entries are as good as any, and its damage stays fenced
// from reads. Nothing undoes it: the rebuilt replica is a new one.
func (r *Replica) Fence() { r.fenced.Store(true) }

// Fenced tells whether Fence was called.
func (r *Replica) Fenced() bool { return r.fenced.Load() }

// CaughtUp is a leader's answer to a replica of its group asking whether
// the group holds everything committed without it.
type CaughtUp struct {
	// Leader: the replica asked leads its group; the rest is its word.
	Leader bool `json:"leader"`
	// Others counts the voters other than the asker (the leader included)
	// that hold every entry committed; Quorum is a majority of the voters.
	Others int `json:"others"`
	Quorum int `json:"quorum"`
	// InSync counts the voters other than the asker in the leader's ISR
	// (answering, within DriverConfig.ISRMaxLagEntries): under load a
	// replica still acknowledging keeps the others a few entries behind
	// the commit, so the asker closes on this and then waits for Others.
	InSync int `json:"in_sync"`
	// Commit is the leader's commit index the others were held against.
	Commit uint64 `json:"commit"`
	// Joint: a configuration change is under way (two sets of voters);
	// no rebuild then.
	Joint bool `json:"joint,omitempty"`
}

// Likely tells whether Enough is likely once the asker stops
// acknowledging: a majority of the others are in sync.
func (c CaughtUp) Likely() bool { return c.Leader && !c.Joint && c.Quorum > 0 && c.InSync >= c.Quorum }

// Enough tells whether the asker may throw its log away: the leader says
// a majority of the group other than the asker holds everything committed.
func (c CaughtUp) Enough() bool { return c.Leader && !c.Joint && c.Quorum > 0 && c.Others >= c.Quorum }

// CaughtUpWithout is the leader's CaughtUp for broker, a replica of group
// k on another node; with rebuild, broker is about to throw its log away
// if the answer is Enough (CaughtUpWithout says what the leader does).
func (d *Driver) CaughtUpWithout(k GroupKey, broker int32, rebuild bool) (CaughtUp, error) {
	g := d.group(k)
	if g == nil {
		return CaughtUp{}, ErrNotHosted
	}
	return g.r.CaughtUpWithout(broker, rebuild), nil
}

// CaughtUpWithout is CaughtUp for broker as this replica sees it: Leader
// false unless it leads. It waits for the group's current round.
//
// With rebuild, and an answer that is Enough, broker throws its log away:
// the match the leader remembers for it (raft never lowers one) is then
// wrong until it has taken a snapshot, so until then the leader counts it
// in no CaughtUp, hands it no leadership (neither back, as the preferred
// replica, nor away: HandOffTarget) and, learning nothing from its stale
// match, keeps sending it appends, whose refusal brings the snapshot
// (sealForJoiner). A new leader starts with no match for anyone.
func (r *Replica) CaughtUpWithout(broker int32, rebuild bool) CaughtUp {
	g := r.rg
	if g == nil {
		return CaughtUp{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.broken != nil {
		return CaughtUp{}
	}
	st := g.rn.Status()
	if st.RaftState != raft.StateLeader {
		return CaughtUp{}
	}
	out := CaughtUp{Leader: true, Commit: st.GetCommit(), Joint: len(st.Config.Voters[1]) > 0}
	// Only a damaged replica asks: no leadership goes to it.
	if g.fencedPeers == nil {
		g.fencedPeers = map[uint64]time.Time{}
	}
	g.fencedPeers[RaftID(broker)] = time.Now()
	voters := st.Config.Voters[0]
	out.Quorum = len(voters)/2 + 1
	isr := *g.isr.Load()
	for id := range voters {
		if id == RaftID(broker) || g.isRebuilding(id, st) {
			continue
		}
		if slices.Contains(isr, brokerOf(id)) {
			out.InSync++
		}
		if id == g.self {
			out.Others++ // the leader holds what it committed
			continue
		}
		if pr, ok := st.Progress[id]; ok && pr.Match >= st.GetCommit() && pr.State != tracker.StateSnapshot {
			out.Others++
		}
	}
	if rebuild && out.Enough() {
		if g.rebuilding == nil {
			g.rebuilding = map[uint64]bool{}
		}
		g.rebuilding[RaftID(broker)] = false
		g.log.WithField("replica", broker).Info("a damaged replica rebuilds from this leader: its match no longer counts until it took a snapshot")
	}
	return out
}

// fencedPeerTTL is how long a replica that asked CaughtUpWithout is taken
// to be damaged: it asks again every pass (node/hosted.MendInterval) while
// it waits.
const fencedPeerTTL = 30 * time.Second

// peerFenced tells whether replica id asked CaughtUpWithout within
// fencedPeerTTL: damaged, it must be handed no leadership (it would not
// take it: Fence, and the leader would drop proposals while it waits for
// a transfer that never lands). Called under mu.
func (g *raftGroup) peerFenced(id uint64) bool {
	at, ok := g.fencedPeers[id]
	if ok && time.Since(at) > fencedPeerTTL {
		delete(g.fencedPeers, id)
		return false
	}
	return ok
}

// isRebuilding tells whether replica id announced its rebuild
// (CaughtUpWithout) and has not since been through a snapshot, as st, the
// leader's status, shows. Called under mu.
func (g *raftGroup) isRebuilding(id uint64, st raft.Status) bool {
	sent, ok := g.rebuilding[id]
	if !ok {
		return false
	}
	pr, known := st.Progress[id]
	switch {
	case !known:
		delete(g.rebuilding, id) // no longer a member
		return false
	case pr.State == tracker.StateSnapshot:
		g.rebuilding[id] = true // also marked as the snapshot is sent (send)
	case sent && pr.State == tracker.StateReplicate:
		delete(g.rebuilding, id) // its match is what it holds again
		return false
	}
	return true
}

// HandOffTarget is, on the leader, a voter other than this one that holds
// everything committed and answered lately: the one to hand leadership to
// before this replica is rebuilt. ok is false when none is, or this
// replica does not lead.
func (r *Replica) HandOffTarget() (int32, bool) {
	g := r.rg
	if g == nil {
		return -1, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.broken != nil {
		return -1, false
	}
	st := g.rn.Status()
	if st.RaftState != raft.StateLeader {
		return -1, false
	}
	best, bestMatch := uint64(0), uint64(0)
	for id := range st.Config.Voters[0] {
		pr, ok := st.Progress[id]
		if id == g.self || !ok || !pr.RecentActive || pr.State == tracker.StateSnapshot || pr.Match < st.GetCommit() || g.isRebuilding(id, st) || g.peerFenced(id) {
			continue
		}
		// The preferred order first among equals: the lowest broker id
		// keeps the choice stable across passes.
		if best == 0 || pr.Match > bestMatch || (pr.Match == bestMatch && id < best) {
			best, bestMatch = id, pr.Match
		}
	}
	if best == 0 {
		return -1, false
	}
	return brokerOf(best), true
}
