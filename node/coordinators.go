package node

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/spool-log/spool/node/coord"
	"github.com/spool-log/spool/node/group"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/txn"
)

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
