package share

import (
	"slices"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Node is the share groups on one broker: the coordinator half answers on
// the node that coordinates the group id (as consumer groups), the
// share-partition half on each partition's leader, its state made durable
// in StateTopic through the Persister over the stores (persister.go). Both
// halves are made on first use.
//
// It holds no lock of its own but the once that makes the halves.
type Node struct {
	b      Broker
	groups OtherGroups
	state  StateHost
	path   string // the admin listener's path of the share-state requests
	log    logrus.FieldLogger

	once  sync.Once
	coord *Coordinator
	parts *Partitions
	// flushed are the share counters as of the last FlushMetrics (the
	// node's metrics loop's alone).
	flushed [7]int64
}

// NewNode wires a node's share groups; path is where the node's admin
// listener serves ServeState.
func NewNode(b Broker, groups OtherGroups, state StateHost, path string, log logrus.FieldLogger) *Node {
	return &Node{b: b, groups: groups, state: state, path: path, log: log}
}

// Get is the share-group coordinator and the share partitions, made on
// first use.
func (n *Node) Get() (*Coordinator, *Partitions) {
	n.once.Do(func() {
		cfg := DefaultConfig()
		n.coord = NewCoordinator(cfg)
		n.parts = NewPartitions(cfg, func(group string) GroupConfig {
			return n.groupConfig(cfg.Defaults, group)
		}, persister{n})
	})
	return n.coord, n.parts
}

// Resolve looks a share group's subscribed topics up in the catalog;
// internal topics are left out, as Kafka leaves them out of share groups.
func (n *Node) Resolve(names []string) map[string]TopicInfo {
	out := make(map[string]TopicInfo, len(names))
	for _, name := range names {
		if n.b.Internal(name) {
			continue
		}
		if t, ok := n.b.Topic(name); ok {
			out[name] = t
		}
	}
	return out
}

// Taken tells whether groupID names a classic or consumer group, which a
// share group may not share its id with.
func (n *Node) Taken(groupID string) bool {
	exists, code := n.groups.Lookup(groupID)
	return code == 0 && exists
}

// DeleteGroup deletes an empty share group for DeleteGroups, its share
// state first (tombstoned on every partition of the topics it knows), so
// that a group made later under the id starts afresh.
func (n *Node) DeleteGroup(id string) kmsg.DeleteGroupsResponseGroup {
	coord, _ := n.Get()
	dg := kmsg.NewDeleteGroupsResponseGroup()
	dg.Group = id
	if members, _ := coord.Ensure(id); members > 0 {
		dg.ErrorCode = kerr.NonEmptyGroup.Code
		return dg
	}
	for _, topic := range coord.Topics(id) {
		t, ok := n.b.Topic(topic)
		if !ok {
			continue
		}
		for p := range t.Partitions {
			k := Key{Group: id, TopicPartition: TopicPartition{TopicID: t.ID, Partition: p}}
			if code := n.OnLeader(OpDelete, topic, k, 0); code != 0 {
				dg.ErrorCode = code
				return dg
			}
		}
	}
	if e := coord.Delete(id); e != nil {
		dg.ErrorCode = e.Code
	}
	return dg
}

// ListGroups are the share groups this node coordinates, for ListGroups
// (type "share", protocol type "share"), by its filters.
func (n *Node) ListGroups(req *kmsg.ListGroupsRequest) []kmsg.ListGroupsResponseGroup {
	matches := func(filter []string, v string) bool {
		return len(filter) == 0 || slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(f, v) })
	}
	if !matches(req.TypesFilter, "share") {
		return nil
	}
	coord, _ := n.Get()
	var out []kmsg.ListGroupsResponseGroup
	for _, g := range coord.List() {
		if _, code := n.groups.Lookup(g.ID); code != 0 || !matches(req.StatesFilter, g.State) {
			continue // no longer this node's to answer for
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.ID, "share", g.State, "share"
		out = append(out, lg)
	}
	return out
}
