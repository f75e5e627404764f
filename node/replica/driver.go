package replica

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/spool-log/spool/internal/stages"
	"github.com/spool-log/spool/node/replica/transport"
)

// GroupKey names a partition's Raft group on the wire: the topic's id and
// the partition index.
type GroupKey = transport.GroupKey

// Transport carries a group's messages to the other nodes
// (node/replica/transport in the node; an in-process router in tests).
// Send must not block; Flush is called after each round of Readys so one
// round leaves in one write per peer.
type Transport interface {
	Send(g GroupKey, m *pb.Message) bool
	Flush()
}

// DriverConfig tunes the driver of every Raft group on a node.
type DriverConfig struct {
	// Tick is the Raft tick; ElectionTick ticks without a leader's word
	// start an election (randomized up to twice that), HeartbeatTick
	// ticks between a leader's heartbeats.
	Tick          time.Duration
	ElectionTick  int
	HeartbeatTick int
	// Workers drive the groups, each group always on the same one (its
	// key's hash), so a slow fsync stalls only its worker's groups.
	Workers int
	// MaxSizePerMsg, MaxInflightMsgs and MaxUncommittedEntriesSize bound
	// the memory of one group (raft.Config). MaxInflightBytes bounds the
	// bytes of appends in flight to one peer; 0 is none, unless
	// LearnerLimiter is set: then learnerInflightBytes
	// (learner_throttle.go).
	MaxSizePerMsg             uint64
	MaxInflightMsgs           int
	MaxInflightBytes          uint64
	MaxUncommittedEntriesSize uint64
	// MaxEntryBytes bounds one batch (one entry): a bigger one is
	// ErrTooLarge. The transport must carry MaxSizePerMsg plus one entry.
	MaxEntryBytes int
	// ISRMaxLagEntries and ISRMaxIdleTicks make a follower in sync: its log
	// matches the leader's to within that many entries and it answered
	// within that many ticks.
	ISRMaxLagEntries uint64
	ISRMaxIdleTicks  int
	// PreferredCheckTicks is how often a leader that is not the preferred
	// replica looks whether it may hand leadership back.
	PreferredCheckTicks int
	// Sync fsyncs a group's entries before its messages go out, as raft's
	// contract requires for the promise (an acknowledged record survives
	// any minority of disks). Off, durability is the topic's flush policy
	// (Kafka's default: the page cache, replicas on other machines).
	Sync bool
	// OnLeaderChange, if set, is told (from a worker, so it must not
	// block) that a group's leader as this replica sees it changed, or a
	// leader's ISR or silent replicas: the node republishes its
	// leadership claims at once.
	OnLeaderChange func()
	// FetchSnapshot opens a peer's snapshot with its records (its
	// Driver.WriteSnapshot), for a follower given a snapshot that holds
	// records (snapcopy.go). Without it such a follower stays behind.
	FetchSnapshot FetchSnapshotFunc
	// LearnerLimiter, if set, bounds the bytes of entries this node's
	// leaders send to learners (learner_throttle.go): the node's copy
	// throttle, so a new replica's catch-up after its snapshot goes at
	// the rate its snapshot did. Voters are never held back.
	LearnerLimiter Limiter
	Log            *logrus.Entry
}

// DefaultDriverConfig: a 100 ms tick, elections after 1-2 s of silence,
// heartbeats every other tick (five per election timeout, so a leader
// cut off is noticed well within it, at half the idle traffic of one per
// tick), four workers.
func DefaultDriverConfig() DriverConfig {
	return DriverConfig{
		Tick: 100 * time.Millisecond, ElectionTick: 10, HeartbeatTick: 2, Workers: 4,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, MaxUncommittedEntriesSize: 64 << 20, MaxEntryBytes: 8 << 20,
		ISRMaxLagEntries: 10_000, ISRMaxIdleTicks: 30, PreferredCheckTicks: 10, Sync: true,
	}
}

// Driver drives every Raft group (replica with more than one copy) of a
// node: one ticker for all, a fixed pool of workers, no goroutine per
// partition. A worker handles a group's Ready whenever the group has
// something new (a proposal, a message, a hint) and on every tick while
// the group is awake (quiesce.go).
type Driver struct {
	cfg  DriverConfig
	log  *logrus.Entry
	seed maphash.Seed

	mu     sync.RWMutex
	groups map[GroupKey]*raftGroup
	tr     Transport

	workers []*worker
	stop    chan struct{}
	wg      sync.WaitGroup
	started bool

	// learnerSent and learnerHeld count the bytes of entries sent to
	// learners under LearnerLimiter and those held back for a later
	// round (learner_throttle.go).
	learnerSent atomic.Int64
	learnerHeld atomic.Int64
}

type worker struct {
	d      *Driver
	mu     sync.Mutex
	groups map[*raftGroup]struct{}
	dirty  map[*raftGroup]struct{}
	wake   chan struct{} // a signal for dirty groups, room for one
	tick   chan struct{} // a tick, room for one
}

// NewDriver makes a driver; SetTransport, then Start.
func NewDriver(cfg DriverConfig) *Driver {
	def := DefaultDriverConfig()
	if cfg.Tick <= 0 {
		cfg.Tick = def.Tick
	}
	if cfg.ElectionTick <= 0 {
		cfg.ElectionTick = def.ElectionTick
	}
	if cfg.HeartbeatTick <= 0 {
		cfg.HeartbeatTick = def.HeartbeatTick
	}
	if cfg.Workers <= 0 {
		cfg.Workers = def.Workers
	}
	if cfg.MaxSizePerMsg == 0 {
		cfg.MaxSizePerMsg = def.MaxSizePerMsg
	}
	if cfg.MaxInflightMsgs <= 0 {
		cfg.MaxInflightMsgs = def.MaxInflightMsgs
	}
	if cfg.MaxInflightBytes == 0 && cfg.LearnerLimiter != nil {
		cfg.MaxInflightBytes = max(learnerInflightBytes, cfg.MaxSizePerMsg)
	}
	if cfg.MaxUncommittedEntriesSize == 0 {
		cfg.MaxUncommittedEntriesSize = def.MaxUncommittedEntriesSize
	}
	if cfg.MaxEntryBytes <= 0 {
		cfg.MaxEntryBytes = def.MaxEntryBytes
	}
	if cfg.ISRMaxLagEntries == 0 {
		cfg.ISRMaxLagEntries = def.ISRMaxLagEntries
	}
	if cfg.ISRMaxIdleTicks <= 0 {
		cfg.ISRMaxIdleTicks = def.ISRMaxIdleTicks
	}
	if cfg.PreferredCheckTicks <= 0 {
		cfg.PreferredCheckTicks = def.PreferredCheckTicks
	}
	if cfg.Log == nil {
		cfg.Log = logrus.NewEntry(logrus.StandardLogger())
	}
	d := &Driver{cfg: cfg, log: cfg.Log.WithField("component", "raft"), seed: maphash.MakeSeed(),
		groups: make(map[GroupKey]*raftGroup), stop: make(chan struct{})}
	for range cfg.Workers {
		d.workers = append(d.workers, &worker{d: d, groups: map[*raftGroup]struct{}{}, dirty: map[*raftGroup]struct{}{},
			wake: make(chan struct{}, 1), tick: make(chan struct{}, 1)})
	}
	return d
}

// SetTransport sets where messages go; before Start.
func (d *Driver) SetTransport(tr Transport) {
	d.mu.Lock()
	d.tr = tr
	d.mu.Unlock()
}

// Start starts the ticker and the workers.
func (d *Driver) Start() {
	d.mu.Lock()
	if d.started {
		d.mu.Unlock()
		return
	}
	d.started = true
	d.mu.Unlock()
	for _, w := range d.workers {
		d.wg.Add(1)
		go w.loop()
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		t := time.NewTicker(d.cfg.Tick)
		defer t.Stop()
		for {
			select {
			case <-d.stop:
				return
			case <-t.C:
				for _, w := range d.workers {
					select {
					case w.tick <- struct{}{}:
					default: // the worker is behind: ticks are not queued
					}
				}
			}
		}
	}()
}

// Stop ends the ticker and the workers; groups stay open (their replicas
// close them).
func (d *Driver) Stop() {
	d.mu.Lock()
	if !d.started {
		d.mu.Unlock()
		return
	}
	d.started = false
	d.mu.Unlock()
	close(d.stop)
	d.wg.Wait()
}

func (d *Driver) workerOf(k GroupKey) *worker {
	var h maphash.Hash
	h.SetSeed(d.seed)
	h.Write(k.Topic[:])
	h.WriteByte(byte(k.Partition))
	h.WriteByte(byte(k.Partition >> 8))
	h.WriteByte(byte(k.Partition >> 16))
	h.WriteByte(byte(k.Partition >> 24))
	return d.workers[h.Sum64()%uint64(len(d.workers))]
}

func (d *Driver) add(g *raftGroup) {
	d.mu.Lock()
	d.groups[g.key] = g
	d.mu.Unlock()
	w := g.w
	w.mu.Lock()
	w.groups[g] = struct{}{}
	w.mu.Unlock()
	w.kick(g)
}

func (d *Driver) remove(g *raftGroup) {
	d.mu.Lock()
	if d.groups[g.key] == g {
		delete(d.groups, g.key)
	}
	d.mu.Unlock()
	w := g.w
	w.mu.Lock()
	delete(w.groups, g)
	delete(w.dirty, g)
	w.mu.Unlock()
}

func (d *Driver) group(k GroupKey) *raftGroup {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.groups[k]
}

func (d *Driver) transport() Transport {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.tr
}

// Deliver hands a message from a peer to its group (the transport's
// handler): queued, never stepped on the caller's goroutine. A message for
// a group this node does not host is dropped.
func (d *Driver) Deliver(from uint64, k GroupKey, m *pb.Message) {
	g := d.group(k)
	if g == nil {
		return
	}
	switch m.GetType() {
	case pb.MsgApp, pb.MsgSnap, pb.MsgHeartbeat:
		g.heard.note(m) // what the leader says of its commit (LeaderCommitHeard)
	}
	g.inMu.Lock()
	if len(g.inbox) < maxInbox {
		if stages.On && len(g.inbox) == 0 {
			g.inboxAt = time.Now()
		}
		g.inbox = append(g.inbox, m)
	}
	g.inMu.Unlock()
	g.seen(from)
	g.w.kick(g)
}

// maxInbox bounds the messages queued for one group between two rounds;
// raft retransmits what is dropped.
const maxInbox = 4096

// Unreachable reports that messages of group k to node could not be sent.
func (d *Driver) Unreachable(k GroupKey, node uint64) {
	if g := d.group(k); g != nil {
		g.inMu.Lock()
		g.unreachable = append(g.unreachable, node)
		g.inMu.Unlock()
		g.w.kick(g)
	}
}

// PeerLost is the transport's word that node's connection to this one
// ended: the groups it leads wake (quiesce.go), so their election timers
// run and, if it died, elect a new leader without waiting for gossip to
// declare it failed.
func (d *Driver) PeerLost(node uint64) {
	d.mu.RLock()
	var led []*raftGroup
	for _, g := range d.groups {
		if g.lead.Load() == node {
			led = append(led, g)
		}
	}
	d.mu.RUnlock()
	for _, g := range led {
		g.wake()
	}
}

// SnapshotStatus reports whether a MsgSnap of group k reached node.
func (d *Driver) SnapshotStatus(k GroupKey, node uint64, ok bool) {
	if g := d.group(k); g != nil {
		g.inMu.Lock()
		g.snapStatus = append(g.snapStatus, snapReport{node, ok})
		g.inMu.Unlock()
		g.w.kick(g)
	}
}

func (w *worker) kick(g *raftGroup) {
	w.mu.Lock()
	if _, ok := w.groups[g]; ok {
		w.dirty[g] = struct{}{}
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *worker) loop() {
	defer w.d.wg.Done()
	var list []*raftGroup
	for {
		tick := false
		select {
		case <-w.d.stop:
			return
		case <-w.wake:
		case <-w.tick:
			tick = true
		}
		if !tick {
			select {
			case <-w.tick:
				tick = true
			default:
			}
		}
		list = list[:0]
		w.mu.Lock()
		if tick {
			for g := range w.groups {
				if _, dirty := w.dirty[g]; dirty || !g.asleep.Load() {
					list = append(list, g)
				}
			}
		} else {
			for g := range w.dirty {
				list = append(list, g)
			}
		}
		clear(w.dirty)
		w.mu.Unlock()
		for _, g := range list {
			g.process(tick)
		}
		if tr := w.d.transport(); tr != nil && len(list) > 0 {
			tr.Flush()
		}
	}
}

// MaxMessageBytes bounds the entries of one message the driver's groups
// send: MaxSizePerMsg, or one entry of up to MaxEntryBytes, whichever is
// larger, with room to spare.
func (d *Driver) MaxMessageBytes() int {
	return int(d.cfg.MaxSizePerMsg) + d.cfg.MaxEntryBytes + 64<<10
}
