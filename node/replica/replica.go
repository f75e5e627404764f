package replica

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"

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
	// Alive says whether gossip sees broker id alive. Single copy decides
	// leadership by it; with Raft it is only a hint for campaigning.
	Alive func(id int32) bool
}

// Replica is one partition's replica on this node. All methods are safe
// for concurrent use.
type Replica struct {
	log      *partition.Log
	self     int32
	replicas []int32
	alive    func(int32) bool

	// epoch is the leader epoch this replica leads in: the newest epoch
	// of the log's leader-epoch cache plus one, fixed at open (doc.go).
	epoch int32

	// mu guards hw's advances, committed and waiters. hw is also read
	// without it.
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
		replicas:  slices.Clone(cfg.Replicas),
		alive:     cfg.Alive,
		committed: make(chan struct{}),
	}
	if r.alive == nil {
		r.alive = func(int32) bool { return true }
	}
	if eps := log.LeaderEpochs(); len(eps) > 0 {
		r.epoch = eps[len(eps)-1].Epoch + 1
	}
	r.hw.Store(log.EndOffset())
	return r
}

// Leader is the broker leading the partition, or -1 when none does: single
// copy, the first replica while it is alive.
func (r *Replica) Leader() int32 {
	if len(r.replicas) == 0 || !r.alive(r.replicas[0]) {
		return -1
	}
	return r.replicas[0]
}

// IsLeader tells whether this node leads the partition.
func (r *Replica) IsLeader() bool { return r.Leader() == r.self }

// LeaderEpoch is the epoch of the current leadership as this replica knows
// it, or -1 when it does not lead (single copy: nothing tells a follower
// the leader's epoch).
func (r *Replica) LeaderEpoch() int32 {
	if !r.IsLeader() {
		return -1
	}
	return r.epoch
}

// Replicas are the partition's replicas in succession order.
func (r *Replica) Replicas() []int32 { return slices.Clone(r.replicas) }

// ISR is the in-sync replica set: single copy, the leader alone (the other
// replicas hold nothing), empty when nobody leads.
func (r *Replica) ISR() []int32 {
	if l := r.Leader(); l >= 0 {
		return []int32{l}
	}
	return []int32{}
}

// Offline are the replicas gossip does not see alive.
func (r *Replica) Offline() []int32 {
	out := []int32{}
	for _, id := range r.replicas {
		if !r.alive(id) {
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
	for i, id := range r.replicas {
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
