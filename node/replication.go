package node

import (
	"context"
	"path/filepath"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/cluster"
	"github.com/spool-log/spool/node/compaction"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/leadership"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/replication"
	"github.com/spool-log/spool/node/topics"
)

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
