package coord

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/spool-log/spool/node/group"
)

// Groups is the consumer-group coordinator (node/group) on this node:
// __consumer_offsets is an ordinary topic of the catalog, placed like any
// other, and this node coordinates the groups of each of its partitions
// that it leads, loading a partition's groups the first time it is asked
// about them and dropping them when it stops leading it.
//
// The coordinator is made on the first group request and closed when the
// node starts shutting down, which answers parked JoinGroup/SyncGroup
// requests so that graceful shutdown does not wait out rebalance timeouts.
type Groups struct {
	b    Broker
	log  logrus.FieldLogger
	base group.Config
	host Host[*group.Coordinator]
	// loadedEpoch is the leader epoch each loaded partition was replayed
	// in (int32 -> int32): leadership that left and came back may have
	// missed commits made meanwhile by another leader, so a partition
	// loaded in another epoch is replayed again.
	loadedEpoch sync.Map
}

func newGroups(b Broker, cfg Config) *Groups {
	g := &Groups{b: b, log: cfg.Log, base: cfg.Group}
	rf := int(cfg.OffsetsTopicReplicationFactor)
	g.host = Host[*group.Coordinator]{
		b: b, log: cfg.Log, what: "consumer groups",
		// The largest odd factor not above offsets.topic.replication.factor
		// and the roster: 2 brokers give 1 copy, so either one's loss
		// leaves the other's groups working.
		topic: InternalTopic{Name: group.TopicName, Partitions: cfg.Group.Partitions, ReplicationFactor: rf, Configs: internalTopicConfigs},
		make:  func() (*group.Coordinator, error) { return group.New(g.config(), internalLog{b, group.TopicName}) },
		close: (*group.Coordinator).Close,
		loader: func(c *group.Coordinator) Loader {
			return groupLoader{c, g}
		},
	}
	return g
}

// config is the coordinator's configuration: the node's, with the
// catalog's hooks.
func (g *Groups) config() group.Config {
	cfg := g.base
	cfg.Logger = g.log
	cfg.PartitionCount = func(topic string) (int32, bool) {
		t, ok := g.b.Topic(topic)
		return t.Partitions, ok
	}
	cfg.Topic = func(name string) ([16]byte, int32, bool) {
		t, ok := g.b.Topic(name)
		return t.ID, t.Partitions, ok
	}
	cfg.TopicNames = func() []string {
		var names []string
		for _, name := range g.b.TopicNames() {
			if !strings.HasPrefix(name, "__") {
				names = append(names, name)
			}
		}
		return names
	}
	cfg.TopicName = g.b.TopicName
	cfg.Partitions = g.Partitions()
	return cfg
}

// Partitions is __consumer_offsets' partition count: an existing topic
// decides, as a group's partition must never change.
func (g *Groups) Partitions() int32 {
	if t, ok := g.b.Topic(group.TopicName); ok {
		return t.Partitions
	}
	return g.base.Partitions
}

// Get returns the coordinator, creating it (and __consumer_offsets) on
// first use.
func (g *Groups) Get() (*group.Coordinator, error) { return g.host.Get() }

// Current is the coordinator if a group request made it.
func (g *Groups) Current() (*group.Coordinator, bool) { return g.host.Current() }

// Ensure loads partition p of __consumer_offsets if this node leads it,
// and unloads it if it no longer does.
func (g *Groups) Ensure(c *group.Coordinator, p int32) error { return g.host.Ensure(c, p) }

// For returns the coordinator if this node coordinates groupID, loading
// the group's partition when needed, or the error code the client should
// see: NOT_COORDINATOR sends it back to FindCoordinator.
func (g *Groups) For(groupID string) (*group.Coordinator, int16) {
	c, err := g.Get()
	if err != nil {
		g.log.WithError(err).Warn("group coordinator unavailable")
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	if err := g.Ensure(c, c.Partition(groupID)); err != nil {
		return nil, Code(err)
	}
	return c, 0
}

// groupLoader is the group coordinator as a Loader: the epoch each
// partition was replayed in is kept beside it (Groups.loadedEpoch), as
// leadership that left and came back may have missed commits made
// meanwhile.
type groupLoader struct {
	c *group.Coordinator
	g *Groups
}

func (l groupLoader) Loaded(p, epoch int32) bool {
	ep, _ := l.g.loadedEpoch.Load(p)
	return l.c.Loaded(p) && ep == epoch
}

func (l groupLoader) Load(p, epoch int32) error {
	if l.Loaded(p, epoch) {
		return nil // loaded meanwhile, by the request before
	}
	if l.c.Loaded(p) {
		l.c.Unload(p) // loaded in another epoch
	}
	if err := l.c.Load(p); err != nil {
		return err
	}
	l.g.loadedEpoch.Store(p, epoch)
	return nil
}

func (l groupLoader) Unload(p int32) { l.c.Unload(p) }

// confirmTimeout bounds ConfirmLeader's wait for a quorum's word.
const confirmTimeout = 5 * time.Second

// Confirm confirms, after a request arrived, that this node still leads
// groupID's partition in the epoch its groups were loaded in, before the
// request is answered from memory: a leader paused or cut off (a zombie)
// believes it leads until it hears of a newer term, and would otherwise
// serve offsets older than commits a newer leader acknowledged.
func (g *Groups) Confirm(ctx context.Context, c *group.Coordinator, groupID string) int16 {
	p := c.Partition(groupID)
	lp, e := g.b.Leader(group.TopicName, p)
	if e != nil {
		return kerr.NotCoordinator.Code
	}
	ep, ok := g.loadedEpoch.Load(p)
	if !ok {
		return kerr.NotCoordinator.Code
	}
	ctx, cancel := context.WithTimeout(ctx, confirmTimeout)
	defer cancel()
	if err := lp.Replica.ConfirmLeader(ctx, ep.(int32)); err != nil {
		g.log.WithFields(logrus.Fields{"group": groupID, "partition": p, "epoch": ep}).Debug("coordinator not confirmed as leader")
		return kerr.NotCoordinator.Code
	}
	return 0
}

// LoadAll loads every partition this node leads, for the requests that
// span all groups (ListGroups).
func (g *Groups) LoadAll() (*group.Coordinator, int16) {
	c, err := g.Get()
	if err != nil {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	var code int16
	var unread []int32
	for p := range c.Partitions() {
		e := Code(g.Ensure(c, p))
		if e == 0 || e == kerr.NotCoordinator.Code {
			continue
		}
		if !g.b.HostsReplica(group.TopicName, p) {
			// Not this node's to answer: its replicas are elsewhere
			// (all down, when it has no leader), and Metadata names them
			// (the CLI's group list reports them). Answering an error for
			// it would have every client drop this node's own groups.
			continue
		}
		code = e
		unread = append(unread, p)
	}
	if len(unread) > 0 {
		g.log.WithFields(logrus.Fields{"partitions": unread, "code": kerr.ErrorForCode(code)}).Debug("list groups: some __consumer_offsets partitions this node holds cannot be read")
	}
	return c, code
}
