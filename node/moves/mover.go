package moves

import (
	"context"
	"net/url"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/replica"
)

// Cluster is the cluster view a Mover reads and the records it makes in it
// (the membership agent).
type Cluster interface {
	Roster() []int32
	IsAlive(broker int32) bool
	LiveBrokers() map[int32]membership.Member
	Topic(name string) (membership.TopicEntry, bool)
	Topics() []membership.TopicEntry
	MovingTopics() []membership.TopicEntry
	DrainingBrokers() []membership.RosterEntry
	Decommissioned(broker int32) bool
	RebalancePaused() bool
	AutoDrain(broker int32) error
	EndAutoDrain(broker int32) error
	FinishDrain(broker int32) (bool, error)
	DrainMove(p int32, from, target []int32) func(*membership.TopicEntry) error
	AutoMove(p int32, target []int32) func(*membership.TopicEntry) error
}

// Replica is a hosted partition's replica, as a move drives it
// (replica.Replica).
type Replica interface {
	Replicated() bool
	WritableEpoch() (int32, bool)
	IsLeader() bool
	Conf() (replica.Conf, bool)
	ChangeConf(ctx context.Context, changes ...replica.ConfChange) error
	LeaveJoint(ctx context.Context) error
	CaughtUp(broker int32) bool
	TransferLeadership(broker int32)
	MemberProgress(broker int32) (replica.Progress, bool)
	Size() int64
	LogStartOffset() int64
	LogEndOffset() int64
}

// Hosted is a partition this node hosts.
type Hosted struct {
	Topic   string
	Index   int32
	ID      membership.TopicID
	Replica Replica
}

// Claim is what a partition's leader last published of its group
// (node/leadership's table): who leads, its voters (none from a peer of an
// earlier version) and its in-sync replicas.
type Claim struct {
	Leader int32
	Voters []int32
	ISR    []int32
}

// Metrics is where a Mover counts (go-metrics).
type Metrics interface {
	IncrCounter(key []string, val float32)
	SetGauge(key []string, val float32)
}

// Config is what a Mover needs from the node that runs it.
type Config struct {
	// Self is this node's broker id.
	Self    int32
	Cluster Cluster
	// Alter changes a topic's catalog entry, waking whoever watches the
	// catalog (the node's reconcile).
	Alter func(topic string, change func(*membership.TopicEntry) error) error
	// Hosted returns the partition of that incarnation this node hosts
	// (ok false: none); AllHosted every partition it hosts.
	Hosted    func(topic string, index int32, id membership.TopicID) (Hosted, bool)
	AllHosted func() []Hosted
	// Claim is the leader's published word on a partition (ok false:
	// none known).
	Claim func(id membership.TopicID, index int32) (Claim, bool)
	// LeaderOf names a partition's leader as the node answers clients
	// (-1: none known).
	LeaderOf func(e membership.TopicEntry, index int32) int32
	// GetJSON asks a peer's admin API (node/peers).
	GetJSON func(ctx context.Context, addr, path string, query url.Values, limit int64, out any) error
	// AutoRebalance starts the moves placement asks for, and drains the
	// brokers down longer than FailedBrokerGrace.
	AutoRebalance     bool
	FailedBrokerGrace time.Duration
	// MaxMoves bounds the moves under way in the catalog.
	MaxMoves int
	Metrics  Metrics
	Log      logrus.FieldLogger
}

// Mover carries moves out: it starts the moves of drains and of
// rebalancing (on the node that starts them: the live broker of the lowest
// id in the roster), steps each move whose partition this node leads, and
// heals the groups whose configuration the catalog lost track of.
//
// Its one piece of state, notVoting (StillVoting's), is guarded by the
// caller's lock: the partition set's plan lock, under which reconcile asks.
// It holds no lock of its own, and none while it calls out.
type Mover struct {
	cfg       Config
	notVoting map[key]time.Time
}

type key struct {
	topic     string
	partition int32
}

// New is a Mover over cfg.
func New(cfg Config) *Mover {
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	return &Mover{cfg: cfg, notVoting: map[key]time.Time{}}
}

// Run steps the moves this node leads every StepEvery, and heals every
// healEvery passes, until ctx ends.
func (m *Mover) Run(ctx context.Context) {
	t := time.NewTicker(StepEvery)
	defer t.Stop()
	suspect := map[key]int{}
	for pass := 1; ; pass++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.Step(ctx)
		if pass%healEvery == 0 {
			m.heal(ctx, suspect)
		}
	}
}

// RunStarts starts the moves of drains and, with AutoRebalance, of
// rebalancing, from one goroutine so the two never count the moves under
// way at once and start more than MaxMoves, until ctx ends.
func (m *Mover) RunStarts(ctx context.Context) {
	t := time.NewTicker(drainEvery)
	defer t.Stop()
	down := map[int32]time.Time{}
	var lastRebalance time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if m.cfg.AutoRebalance && time.Since(lastRebalance) >= rebalanceEvery {
			lastRebalance = time.Now()
			m.StartRebalance()
		}
		if !m.startsMoves() {
			clear(down) // another node counts, and will drain
			continue
		}
		m.endReturnedAutoDrains()
		if m.cfg.AutoRebalance {
			m.watchFailed(down)
		}
		m.drain()
	}
}
