package leadership

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/topics"
)

// How leadership reaches every node: this node publishes a claim for each
// replica it leads (Leaders' publisher, on Local), and merges its peers'
// claims into a Table (the Syncer); Leaders answers who leads a partition
// from both (answer.go), for every handler and the admin API.
const (
	// leadershipScan is how often the local replicas are asked whether
	// they lead besides when told: every membership change, and every
	// change of a Raft group's leader or ISR (Changed). Each scan
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

// Agent is what the publisher asks of the membership agent.
type Agent interface {
	Subscribe() (<-chan membership.MemberEvent, func())
	Members() []membership.Member
	SetLeadershipTag(value string) error
}

// LeadersConfig is what the node hands its Leaders. The funcs are asked
// when needed, so they may read parts the node makes after Leaders.
type LeadersConfig struct {
	Self int32
	// Partitions are the partitions open here.
	Partitions func() []*hosted.Partition
	// Hosted is the open partition of the catalog's current incarnation
	// of topic (its id), or nil.
	Hosted func(topic string, index int32, id topics.TopicID) *hosted.Partition
	// Topic is the catalog's topic of that name.
	Topic func(name string) (topics.Spec, bool)
	// ClusterView is the fallback answer where neither a replica here nor
	// a claim names a leader: the replica's where this node hosts the
	// partition, else the cluster view's guess, its epoch unknown (-1).
	ClusterView func(spec topics.Spec, index int32, alive func(int32) bool) replica.State
	// Alive tells the brokers gossip sees alive.
	Alive func(int32) bool
	// MarkLed records that the partitions given, led here, have had a
	// leader (topics.LedMarks).
	MarkLed func([]topics.LedPartition)
	// Fetch pulls the peers' claims from their admin listeners.
	Fetch membership.FetchFunc
	Log   logrus.FieldLogger
}

// Leaders is who leads what, cluster-wide: this node's claims, its peers'
// in the table, and the one answer drawn from both.
type Leaders struct {
	cfg   LeadersConfig
	local *Local
	table *Table
	poke  chan struct{} // Changed's signal to the publisher
}

// NewLeaders makes the node's leadership; Start runs its loops.
func NewLeaders(cfg LeadersConfig) *Leaders {
	return &Leaders{cfg: cfg, local: NewLocal(cfg.Self), table: NewTable(), poke: make(chan struct{}, 1)}
}

// Local is this node's claims, which its admin listener serves (Path).
func (l *Leaders) Local() *Local { return l.local }

// Lookup is the table's claim on a partition, as peers made it: the raw
// word, for what must see a claim the answer ignores (moves, /readyz).
func (l *Leaders) Lookup(id topics.TopicID, index int32) (Claim, bool) {
	return l.table.Lookup(id, index)
}

// Changed has the publisher scan at once rather than at its next tick:
// whoever learns that a local replica gained or lost leadership (the
// replica driver, on a Raft leader change) calls it. Never blocks.
func (l *Leaders) Changed() {
	select {
	case l.poke <- struct{}{}:
	default:
	}
}

// Start starts publishing this node's claims and pulling its peers',
// each under run (the node's one owner of background loops); both end
// when the context run gives them ends.
func (l *Leaders) Start(agent Agent, run func(func(context.Context)) bool) {
	events, cancel := agent.Subscribe()
	syncer := NewSyncer(SyncConfig{
		Self: l.cfg.Self, Table: l.table, Members: agent.Members,
		Fetch:    l.cfg.Fetch,
		Interval: leadershipSync, DropAfter: leadershipDrop, Log: l.cfg.Log,
	})
	run(syncer.Run)
	run(func(ctx context.Context) {
		defer cancel()
		t := time.NewTicker(leadershipScan)
		defer t.Stop()
		for {
			l.publish(agent)
			select {
			case <-ctx.Done():
				return
			case <-time.After(leadershipScanGap):
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-l.poke:
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

// publish sets this node's claims from its leading replicas and
// republishes its tag when they changed.
func (l *Leaders) publish(agent Agent) {
	var claims []Claim
	var led []topics.LedPartition
	for _, p := range l.cfg.Partitions() {
		st := p.Replica.State()
		if st.Leader != l.cfg.Self || st.LeaderEpoch < 0 {
			continue
		}
		// The voters tell a replica the catalog no longer names whether
		// the group still counts it (the node's stillVoting); the ISR leaves out a
		// voter that lags.
		var voters []int32
		if p.Replica.Replicated() {
			voters = p.Replica.Replicas()
			led = append(led, topics.LedPartition{Topic: p.Topic, ID: p.TopicID, Index: p.Index})
		}
		claims = append(claims, Claim{Topic: p.TopicID, Partition: p.Index, Leader: st.Leader,
			Epoch: st.LeaderEpoch, ISR: st.ISR, Offline: st.Offline, Voters: voters})
	}
	if l.local.Set(claims) {
		if err := agent.SetLeadershipTag(l.local.Tag()); err != nil {
			l.cfg.Log.WithError(err).Warn("publish leadership tag")
		}
	}
	l.cfg.MarkLed(led)
}
