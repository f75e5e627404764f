package node

// The adapters that hand the node's parts what they need from it, and
// their construction: access (node/access), the coordinators (node/coord)
// and replication (node/replication, node/leadership, node/compaction).

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/access"
	"github.com/spool-log/spool/node/authz"
	"github.com/spool-log/spool/node/cluster"
	"github.com/spool-log/spool/node/compaction"
	"github.com/spool-log/spool/node/coord"
	"github.com/spool-log/spool/node/group"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/leadership"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/replication"
	"github.com/spool-log/spool/node/sasl"
	"github.com/spool-log/spool/node/topics"
	"github.com/spool-log/spool/node/txn"
	"github.com/spool-log/spool/wire"
)

type (
	SecurityProtocol = access.SecurityProtocol
	Listener         = access.Listener
	SASLConfig       = sasl.Config
)

const (
	Plaintext     = access.Plaintext
	SSL           = access.SSL
	SASLPlaintext = access.SASLPlaintext
	SASLSSL       = access.SASLSSL
)

// ParseSecurityProtocol reads a protocol name, in any case.
func ParseSecurityProtocol(s string) (SecurityProtocol, error) {
	return access.ParseSecurityProtocol(s)
}

// DefaultSASLConfig offers both SCRAM mechanisms, no PLAIN, and sessions
// that do not end.
func DefaultSASLConfig() SASLConfig { return sasl.DefaultConfig() }

// kafkaListeners are the configured listeners, the main one first.
func (c *Config) kafkaListeners() []Listener {
	main := Listener{Name: c.KafkaListenerName, Addr: c.KafkaAddr, AdvertisedAddr: c.AdvertisedKafkaAddr, Protocol: c.KafkaProtocol}
	return access.ListenersOf(main, c.Listeners)
}

func (c *Config) validateListeners() error {
	return access.ValidateListeners(c.kafkaListeners(), c.TLS, c.SASL)
}

// newAccess loads the TLS files, the admin token and the SASL
// credentials, and makes the clients of the peers' admin APIs.
func (n *Node) newAccess() error {
	c := n.cfg
	g, err := access.New(access.Config{
		Listeners: c.kafkaListeners(), TLS: c.TLS, AdminTLS: c.AdminTLS, RaftTLS: c.RaftTLS,
		AdminTLSPeerCAFile: c.AdminTLSPeerCAFile, AdminTokenFile: c.AdminTokenFile, AdminTokenForReads: c.AdminTokenForReads,
		AdminAddr: c.AdminAddr, TLSReloadInterval: c.TLSReloadInterval, SASL: c.SASL,
		Authz:     authz.Config{SuperUsers: c.SuperUsers, AllowIfNoACL: c.AllowEveryoneIfNoACL},
		AuthzHook: c.authzHook, Quota: c.Quota, Log: n.log,
	}, access.Deps{Waits: requestWaits, ServerStats: func() (wire.Stats, bool) {
		if n.server == nil {
			return wire.Stats{}, false
		}
		return n.server.Stats(), true
	}})
	if err != nil {
		return err
	}
	n.access, n.peerFetchFunc, n.peers = g, g.PeerFetch(), g.Peers()
	// The password has been hashed; the config keeps no copy of it.
	n.cfg.SASL.BootstrapPassword = ""
	return nil
}

// Reload reads the TLS files, the admin token file and the SASL
// credentials file again. What cannot be loaded is reported and the
// previous material kept.
func (n *Node) Reload() error { return n.access.Reload() }

// ListenerAddrs maps each Kafka listener's name to its bound address
// (after Start).
func (n *Node) ListenerAddrs() map[string]string { return n.access.ListenerAddrs() }

// groupCoordinatorAs is groupCoordinatorFor behind Kafka's group rule:
// op on the group, else GROUP_AUTHORIZATION_FAILED, asked first.
func (n *Node) groupCoordinatorAs(who authz.Requester, op kmsg.ACLOperation, groupID string) (*group.Coordinator, int16) {
	if !who.MayGroup(op, groupID) {
		return nil, kerr.GroupAuthorizationFailed.Code
	}
	return n.coords.Groups.For(groupID)
}

// The node's coordinators (node/coord): consumer groups, transactions and
// share groups, each made on first use with its internal topic. Handlers
// reach them through n.coords; node/coord reaches the node through
// coordBroker.

// newCoordinators wires the coordinators from the node's configuration.
func (n *Node) newCoordinators(pids *txn.ProducerIDs) *coord.Coordinators {
	gs := n.cfg.Groups
	gc := group.DefaultConfig()
	gc.InitialRebalanceDelay = gs.InitialRebalanceDelay
	gc.MinSessionTimeout, gc.MaxSessionTimeout = gs.MinSessionTimeout, gs.MaxSessionTimeout
	gc.Partitions = gs.OffsetsTopicPartitions
	gc.ConsumerSessionTimeout, gc.ConsumerHeartbeatInterval = gs.ConsumerSessionTimeout, gs.ConsumerHeartbeatInterval
	return coord.New(coordBroker{n}, coord.Config{
		Log: n.log, Group: gc, OffsetsTopicReplicationFactor: gs.OffsetsTopicReplicationFactor,
		TxnAbortInterval: n.cfg.TxnAbortInterval, ProducerIDs: pids,
	})
}

// coordBroker is coord.Broker: the node as its coordinators see it.
type coordBroker struct{ n *Node }

func (b coordBroker) NodeID() int32 { return b.n.cfg.NodeID }
func (b coordBroker) Closing() bool { return b.n.isClosing() }

func (b coordBroker) Topic(name string) (coord.Topic, bool) {
	spec, ok := b.n.catalog.Topic(name)
	return coord.Topic{ID: spec.ID, Partitions: spec.Partitions}, ok
}

func (b coordBroker) TopicName(id [16]byte) (string, bool) {
	spec, ok := b.n.catalog.TopicByID(TopicID(id))
	return spec.Name, ok
}

func (b coordBroker) TopicNames() []string {
	var names []string
	for _, spec := range b.n.catalog.Topics() {
		names = append(names, spec.Name)
	}
	return names
}

func (b coordBroker) HostsReplica(topic string, p int32) bool {
	spec, ok := b.n.catalog.Topic(topic)
	return ok && int(p) < len(spec.Replicas) && spec.Hosts(p, b.n.cfg.NodeID)
}

func (b coordBroker) CreateTopic(name string, partitions int32, rf int16, configs map[string]string) error {
	if _, err := b.n.parts.CreateTopic(hosted.Create{Name: name, Partitions: partitions, ReplicationFactor: rf, Configs: configs, Auto: true}); err != nil && kerrOf(err) != kerr.TopicAlreadyExists {
		return topicRefusal(err)
	}
	return nil
}

func (b coordBroker) ClusterFactor(configured int) int16 { return b.n.repl.ClusterFactor(configured) }

func (b coordBroker) LeaderOf(topic string, p int32) int32 {
	spec, ok := b.n.catalog.Topic(topic)
	if !ok {
		return -1
	}
	return b.n.leaders.LeaderOf(spec, p)
}

func (b coordBroker) Leader(topic string, p int32) (*hosted.Partition, *kerr.Error) {
	return b.n.leaderPartition(topic, p)
}

func (b coordBroker) Hosted(topic string, p int32) *hosted.Partition {
	spec, ok := b.n.catalog.Topic(topic)
	if !ok {
		return nil
	}
	return b.n.parts.Current(topic, p, spec.ID)
}

func (b coordBroker) PostToBroker(ctx context.Context, broker int32, path string, req any, limit int64, out any) error {
	addrs := func(id int32) (string, bool) {
		m, ok := b.n.agent.LiveBrokers()[id]
		return m.AdminAddr, ok
	}
	return b.n.peers.PostToBroker(ctx, addrs, broker, path, req, limit, out)
}

func (b coordBroker) Go(fn func(ctx context.Context)) bool { return b.n.loops.Go(fn) }

func (b coordBroker) Setting(name string) (string, bool) {
	if b.n.agent == nil {
		return "", false
	}
	return b.n.agent.Setting(name)
}

func (b coordBroker) SetSetting(name, value string) error {
	if b.n.agent == nil {
		return errors.New("cluster membership not started")
	}
	return b.n.agent.SetSetting(name, value)
}

// The node's replication (node/replication: the Raft driver and
// transport, snapshot copies, the replication metrics and /readyz's
// catch-up gate, the factors' policy), who leads what (node/leadership,
// the one answer every handler and the admin API use) and the log cleaner
// (node/compaction), each handed here what it needs of the node. Their
// loops run under n.loops (node.go's startLoops); the driver and the
// transport stop in stopParts, after the partitions close.

// newReplication prepares the node's replication; Start binds it
// (startReplication).
func (n *Node) newReplication() (*replication.Replication, error) {
	return replication.New(replication.Config{
		NodeID: n.cfg.NodeID, Raft: n.cfg.Raft,
		RaftAddr: n.cfg.RaftAddr, AdvertisedRaftAddr: n.cfg.AdvertisedRaftAddr,
		MembershipDir: filepath.Join(n.cfg.DataDir, cluster.Dir),
		KafkaAddr:     n.KafkaAddr, AdvertisedKafkaAddr: n.AdvertisedKafkaAddr,
		TLS:                n.access.RaftTLS(),
		CopyBytesPerSecond: n.cfg.ReplicaCopyBytesPerSecond,
		OnLeaderChange:     func() { n.leaders.Changed() },
		Partitions:         func() []*hosted.Partition { return n.parts.All() },
		Claimed: func(id TopicID, index int32) (int32, bool) {
			c, ok := n.leaders.Lookup(id, index)
			return c.Leader, ok
		},
		EvenTopics: func() ([]TopicSpec, bool) {
			if n.agent == nil {
				return nil, false
			}
			return n.catalog.Topics(), true
		},
		DefaultReplicationFactor:      n.cfg.DefaultReplicationFactor,
		OffsetsTopicReplicationFactor: n.cfg.Groups.OffsetsTopicReplicationFactor,
		Peers:                         n.peers, Gauges: n.metrics, Metrics: n.metrics.Metrics,
		Registry: n.metrics.Registry, Log: n.log,
	})
}

// startReplication builds the gossip keyring, which Serf and the Raft
// transport's handshake share, then binds the transport and starts the
// driver; before the membership agent starts, whose tags carry the bound
// address.
func (n *Node) startReplication() error {
	ring, err := membership.BuildKeyring(n.cfg.Gossip.Key, n.cfg.Gossip.KeyringFile)
	if err != nil {
		return err
	}
	n.gossipRing = ring
	return n.repl.Start(ring)
}

// newLeaders is who leads what, cluster-wide; its loops start with the
// others (startLoops), once the agent exists.
func (n *Node) newLeaders() *leadership.Leaders {
	var l *leadership.Leaders
	led := topics.NewLedMarks(func() topics.LedRecorder { return n.agent }, func() { l.Changed() }, n.log)
	l = leadership.NewLeaders(leadership.LeadersConfig{
		Self: n.cfg.NodeID, Partitions: func() []*hosted.Partition { return n.parts.All() },
		Hosted: func(topic string, index int32, id TopicID) *hosted.Partition {
			return n.parts.Current(topic, index, id)
		},
		Topic: func(name string) (TopicSpec, bool) { return n.catalog.Topic(name) },
		ClusterView: func(spec TopicSpec, index int32, alive func(int32) bool) replica.State {
			if p := n.parts.Current(spec.Name, index, spec.ID); p != nil {
				return p.Replica.State()
			}
			return n.cluster.Leadership(spec.Replicas[index], alive)
		},
		Alive:   func(id int32) bool { return n.agent.IsAlive(id) },
		MarkLed: led.Mark,
		Fetch: func(ctx context.Context, m membership.Member, path string) ([]byte, error) {
			return n.peerFetchFunc(ctx, m, path)
		},
		Log: n.log,
	})
	return l
}

// newCleaner is the node's log cleaner (startLoops runs it).
func (n *Node) newCleaner() *compaction.Cleaner {
	return compaction.New(compaction.Config{
		Partitions: func() []*hosted.Partition { return n.parts.All() }, Closing: n.isClosing,
		RetentionCheckInterval: n.cfg.RetentionCheckInterval,
		Metrics:                n.metrics, Log: n.log,
	})
}

// repairConfig is how the node's partition set rebuilds damaged replicas
// (node/hosted's repair.go), asking the leader over its admin listener
// (node/replication's repair.go); built before the quarantine and the
// scrubber, so it reaches them late.
func (n *Node) repairConfig() *hosted.RepairConfig {
	return &hosted.RepairConfig{
		Ask: func(ctx context.Context, p *hosted.Partition, leader int32, rebuild bool) (replica.CaughtUp, error) {
			return n.repl.AskCaughtUp(ctx, p, leader, rebuild)
		},
		SetAside: func(dir, why string, fields logrus.Fields) (string, error) {
			return n.quarantine.Move(dir, why, fields)
		},
		Report: func(r hosted.Repair) { n.scrub.OnRepair(r) },
	}
}
