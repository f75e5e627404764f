package replica

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spool-log/spool/node/replica/raftlog"
	"github.com/spool-log/spool/partition"
)

// ErrNotLeader refuses an append on a replica that does not lead its
// partition (NOT_LEADER_OR_FOLLOWER).
var ErrNotLeader = errors.New("replica is not the partition's leader")

// Config places one replica: who this node is, the partition's replicas
// and how to tell which of them are alive.
type Config struct {
	// Self is this node's broker id.
	Self int32
	// Replicas are the partition's replicas in succession order, as the
	// topic catalog placed them; the first is the preferred leader.
	Replicas []int32
	// Voters, for a replica with no Raft state that does not Join, are
	// the configuration the group began with; nil means Replicas. They
	// differ while a move is under way: Replicas is then the move's
	// target (who should lead), which the group does not have yet.
	Voters []int32
	// Alive says whether gossip sees broker id alive. Single copy decides
	// leadership by it; with Raft it is only a hint for campaigning.
	Alive func(id int32) bool

	// Driver, for a partition with more than one replica, makes this
	// replica a member of the partition's Raft group named Group, driven
	// by it (Open). A single copy stays on the direct path (doc.go).
	Driver *Driver
	Group  GroupKey
	// Join opens a replica the group is adding (a reassignment) rather
	// than one it began with: with no Raft state yet it starts with no
	// configuration, as a learner to be, and takes the leader's snapshot,
	// which names the group's members (confchange.go). Ignored once the
	// replica has Raft state.
	Join bool
	// ShutdownCommit is the group's entry in the node's shutdown
	// checkpoint (shutdown.go), or nil.
	ShutdownCommit *raftlog.CommitPoint
	// Remote, when the node has an object store, is the partition's
	// tiered storage: it applies the remote-storage records and holds
	// local retention at what was uploaded (remote.go). Nil keeps
	// everything local.
	Remote RemoteLog
}

// Replica is one partition's replica on this node. All methods are safe
// for concurrent use.
type Replica struct {
	log   *partition.Log
	self  int32
	alive func(int32) bool
	// pref is the catalog's replica list, in succession order
	// (SetReplicas); with Raft, the members are the group's voters in
	// this order (members).
	pref atomic.Pointer[[]int32]

	// epoch is the leader epoch this replica leads in: the newest epoch
	// of the log's leader-epoch cache plus one, fixed at open (doc.go).
	epoch int32

	// mu guards hw's advances, committed and waiters. hw is also read
	// without it.
	// rg is the replica's Raft group member; nil for a single copy.
	rg *raftGroup
	// retention is the topic's retention by age and size on a replicated
	// log, whose own is off (maintenance.go); guarded by mu.
	retentionAge   time.Duration
	retentionBytes int64
	// rgSync: the replicated log fsyncs every append (DriverConfig.Sync).
	rgSync bool
	// remote is Config.Remote (remote.go); fixed at open.
	remote RemoteLog

	// fenced: the log holds damage and the replica waits to be rebuilt
	// from its peers (Fence); it takes no leadership handed to it.
	fenced atomic.Bool

	mu        sync.Mutex
	hw        atomic.Int64
	committed chan struct{} // closed (and replaced) each time hw advances
	waiters   map[chan struct{}]struct{}
	closed    bool
}

// New wraps an open log in a replica, which owns it from then on: close it
// with Close or Release, not the log. The high watermark starts at the log
// end (single copy: what a recovered log holds was committed).
func New(log *partition.Log, cfg Config) *Replica {
	r := &Replica{
		log:       log,
		self:      cfg.Self,
		alive:     cfg.Alive,
		committed: make(chan struct{}),
		remote:    cfg.Remote,
	}
	if r.remote != nil {
		// The replica applies retention, held at what was uploaded;
		// openRaft does the same for a Raft log.
		lc := log.Config()
		r.retentionAge, r.retentionBytes = lc.RetentionAge, lc.RetentionBytes
		lc.RetentionAge, lc.RetentionBytes = -1, -1
		log.SetConfig(lc)
	}
	pref := slices.Clone(cfg.Replicas)
	r.pref.Store(&pref)
	if r.alive == nil {
		r.alive = func(int32) bool { return true }
	}
	if eps := log.LeaderEpochs(); len(eps) > 0 {
		r.epoch = eps[len(eps)-1].Epoch + 1
	}
	r.hw.Store(log.EndOffset())
	return r
}

// Open is New for a replica of a partition with more than one copy when
// cfg has a Driver: its log becomes the Raft log of the partition's group
// (voters: the replicas), the high watermark its commit point.
func Open(log *partition.Log, cfg Config) (*Replica, error) {
	r := New(log, cfg)
	if cfg.Driver == nil || (len(cfg.Replicas) < 2 && !cfg.Join) {
		return r, nil
	}
	if err := r.openRaft(cfg); err != nil {
		return nil, fmt.Errorf("replica of %s: %w", log.Dir(), err)
	}
	return r, nil
}

// Replicated tells whether the replica is a member of a Raft group.
func (r *Replica) Replicated() bool { return r.rg != nil }

// MemberFailed is gossip's word that broker id failed or left: with Raft a
// hint to elect a new leader at once if it led; nothing for a single copy,
// whose leadership follows liveness already.
func (r *Replica) MemberFailed(id int32) {
	if r.rg != nil {
		r.rg.memberFailed(id)
	}
}

// MemberJoined is gossip's word that broker id joined (or came back): with
// Raft the group wakes if it was quiesced, so a leader brings the replica
// up to date at once rather than when its election timer wakes the group.
func (r *Replica) MemberJoined(id int32) {
	if r.rg != nil && (slices.Contains(r.members(), id) || r.rg.hasLearner(id)) {
		r.rg.wake()
	}
}

// TransferLeadership asks the leader to hand leadership to broker to (a
// replica): raft brings it up to date, then has it campaign. It returns at
// once; Leader tells when it happened. Nothing for a single copy.
func (r *Replica) TransferLeadership(to int32) {
	if r.rg == nil {
		return
	}
	r.rg.inMu.Lock()
	r.rg.transferTo = RaftID(to)
	r.rg.inMu.Unlock()
	r.rg.w.kick(r.rg)
}

// WritableEpoch is the leader epoch in which this replica takes appends
// now, and whether it does: with Raft, once it leads and an entry of its
// term is committed (everything an earlier leader left is then below the
// high watermark, which rebuilding producer state needs).
func (r *Replica) WritableEpoch() (int32, bool) {
	if r.rg != nil {
		return int32(r.rg.term.Load()), r.rg.writable.Load()
	}
	return r.epoch, r.IsLeader()
}

// Leader is the broker leading the partition, or -1 when none does: single
// copy, the first replica while it is alive; with Raft, the group's leader
// as this replica last heard.
func (r *Replica) Leader() int32 {
	if r.rg != nil {
		return brokerOf(r.rg.lead.Load())
	}
	rs := r.members()
	if len(rs) == 0 || !r.alive(rs[0]) {
		return -1
	}
	return rs[0]
}

// IsLeader tells whether this node leads the partition.
func (r *Replica) IsLeader() bool {
	if r.rg != nil {
		return r.rg.leading.Load()
	}
	return r.Leader() == r.self
}

// LeaderEpoch is the epoch of the current leadership as this replica knows
// it, or -1 when it does not lead (single copy: nothing tells a follower
// the leader's epoch).
func (r *Replica) LeaderEpoch() int32 {
	if r.rg != nil {
		if r.rg.lead.Load() == 0 {
			return -1
		}
		return int32(r.rg.term.Load())
	}
	if !r.IsLeader() {
		return -1
	}
	return r.epoch
}

// Replicas are the partition's replicas in succession order: with Raft,
// the group's voters as this replica applied its configuration (both
// sides of a joint one), in the order SetReplicas gave.
func (r *Replica) Replicas() []int32 { return slices.Clone(r.members()) }

// members is Replicas without the copy: not to be modified.
func (r *Replica) members() []int32 {
	if r.rg != nil {
		return *r.rg.members.Load()
	}
	return *r.pref.Load()
}

// SetReplicas gives the catalog's replica list, in succession order, as
// it changes (a reassignment): with Raft it orders the voters (the first
// present is the preferred leader) but does not change the group, whose
// configuration changes only through ChangeConf.
func (r *Replica) SetReplicas(ids []int32) {
	if slices.Equal(*r.pref.Load(), ids) {
		return
	}
	pref := slices.Clone(ids)
	r.pref.Store(&pref)
	if g := r.rg; g != nil {
		g.mu.Lock()
		g.setMembers()
		g.mu.Unlock()
	}
}

// ISR is the in-sync replica set: single copy, the leader alone (the other
// replicas hold nothing), empty when nobody leads.
func (r *Replica) ISR() []int32 {
	if r.rg != nil {
		return slices.Clone(*r.rg.isr.Load())
	}
	if l := r.Leader(); l >= 0 {
		return []int32{l}
	}
	return []int32{}
}

// Offline are the replicas gossip does not see alive.
//
// With Raft, a leader also counts the replicas it has not heard from
// within DriverConfig.ISRMaxIdleTicks, whatever gossip says.
func (r *Replica) Offline() []int32 {
	var silent []int32
	if r.rg != nil && r.rg.leading.Load() {
		if s := r.rg.silent.Load(); s != nil {
			silent = *s
		}
	}
	out := []int32{}
	for _, id := range r.members() {
		if !r.alive(id) || slices.Contains(silent, id) {
			out = append(out, id)
		}
	}
	return out
}

// State is the partition's leadership as this replica sees it, at one
// moment.
type State struct {
	Leader      int32 // -1: none
	LeaderEpoch int32 // -1: unknown (this replica does not lead)
	ISR         []int32
	Offline     []int32
}

// State takes Leader, LeaderEpoch, ISR and Offline together, asking about
// each replica's liveness once (Metadata asks for every partition).
func (r *Replica) State() State {
	st := State{Leader: -1, LeaderEpoch: -1, ISR: []int32{}, Offline: []int32{}}
	if r.rg != nil {
		st.Leader, st.LeaderEpoch, st.ISR, st.Offline = r.Leader(), r.LeaderEpoch(), r.ISR(), r.Offline()
		return st
	}
	for i, id := range r.members() {
		if !r.alive(id) {
			st.Offline = append(st.Offline, id)
		} else if i == 0 {
			st.Leader = id
			st.ISR = append(st.ISR, id)
		}
	}
	if st.Leader >= 0 && st.Leader == r.self {
		st.LeaderEpoch = r.epoch
	}
	return st
}

// Stopped is why the replica's Raft group stopped, or nil: a write its log
// or Raft state refused (a full or failing disk). A stopped group steps
// nothing more and, if it led, loses leadership to the others; the node
// reopens the replica from disk to mend it (node/hosted/mend.go).
func (r *Replica) Stopped() error {
	if r.rg == nil {
		return nil
	}
	r.rg.mu.Lock()
	defer r.rg.mu.Unlock()
	return r.rg.broken
}
