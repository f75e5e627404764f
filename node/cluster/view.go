// Package cluster is the node's side of its membership agent (package
// membership): the agent's configuration from the node's (AgentConfig,
// GossipConfig), and the node's view of the brokers (View: who is alive,
// where each listens, the roster placement hashes over, the cluster view's
// guess of who leads a partition) as Metadata and CreateTopics use it.
// A single node is a cluster of one; there is no other code path.
//
// It holds no lock of its own: the agent orders its state.
package cluster

import (
	"fmt"
	"net"
	"sort"
	"strconv"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/topics"
)

// Broker is one live broker as Metadata reports it.
type Broker struct {
	ID   int32
	Host string
	Port int32
	Rack string
}

// View is the node's view of the brokers, from its membership agent: Serf
// liveness plus the roster placement hashes over.
type View struct {
	agent *membership.Agent
	self  int32
}

// NewView is broker self's view through agent.
func NewView(agent *membership.Agent, self int32) *View {
	return &View{agent: agent, self: self}
}

// ClusterID is reported in Metadata v2+: the cluster-wide id gossip settles
// on (the oldest node's proposal), the same on every node once they have
// met.
func (c *View) ClusterID() string { return c.agent.ClusterID() }

// ControllerID is the broker Metadata names controller; clients send
// CreateTopics and DeleteTopics there. Every node can serve them (the
// catalog is gossiped), and the node answering is certainly alive, so it
// names itself.
func (c *View) ControllerID() int32 { return c.self }

// Brokers lists the live brokers, this one included, by id. A member whose
// advertised Kafka address does not parse is left out: clients could not
// reach it anyway.
func (c *View) Brokers() []Broker {
	live := c.agent.LiveBrokers()
	out := make([]Broker, 0, len(live))
	for id, m := range live {
		host, port, err := SplitHostPort(m.KafkaAddr)
		if err != nil {
			continue
		}
		out = append(out, Broker{ID: id, Host: host, Port: port, Rack: m.Rack})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// BrokersOn lists the live brokers, by id, with their advertised address
// on the named listener (membership.Member.ListenerAddr): a broker without
// that listener is left out, as Kafka leaves out brokers lacking the
// client's listener; one that gossips no listener names (an older node)
// answers with its one Kafka address.
func (c *View) BrokersOn(listener string) []Broker {
	live := c.agent.LiveBrokers()
	out := make([]Broker, 0, len(live))
	for id, m := range live {
		addr, ok := m.ListenerAddr(listener)
		if !ok {
			continue
		}
		host, port, err := SplitHostPort(addr)
		if err != nil {
			continue
		}
		out = append(out, Broker{ID: id, Host: host, Port: port, Rack: m.Rack})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Place picks the replicas of each partition of a new topic, in succession
// order: rendezvous hashing over the roster (every broker ever seen alive,
// decommissioned ones excepted), not only over the brokers alive right now.
func (c *View) Place(topic string, partitions int32, rf int16) ([][]int32, error) {
	roster := c.agent.Roster()
	if int(rf) > len(roster) {
		return nil, fmt.Errorf("%w: replication factor %d, but the roster has %d brokers", topics.ErrReplicationFactor, rf, len(roster))
	}
	return membership.PlaceTopic(topic, partitions, roster, int(rf)), nil
}

// Roster is every broker id a manual placement may name: the brokers ever
// seen alive, decommissioned ones excepted, as Place hashes over.
func (c *View) Roster() []int32 { return c.agent.Roster() }

// Leader is the broker leading a partition with these replicas, or -1.
// Until replication lands only the first replica holds the data, so it
// leads while it is alive and nobody does otherwise: the partition is
// unavailable rather than served, empty, by another replica.
func (c *View) Leader(replicas []int32) int32 {
	leader, ok := c.agent.PreferredLeader(replicas)
	if !ok {
		return -1
	}
	return leader
}

// PartitionsLed counts, per live broker, the partitions of topics it leads.
func (c *View) PartitionsLed(specs []topics.Spec) map[int32]int {
	live := c.agent.LiveBrokers()
	out := make(map[int32]int, len(live))
	for _, t := range specs {
		for _, replicas := range t.Replicas {
			if leader, ok := membership.PreferredLeader(replicas, live); ok {
				out[leader]++
			}
		}
	}
	return out
}

// Leadership is partition replicas' leader, leader epoch, ISR and offline
// replicas as the cluster view guesses them, for a partition this node
// does not host and no leader claims (alive: the brokers alive): the
// preferred live replica leads, alone in the ISR, the epoch unknown (-1).
func (c *View) Leadership(replicas []int32, alive func(int32) bool) replica.State {
	st := replica.State{Leader: c.Leader(replicas), LeaderEpoch: -1, ISR: []int32{}, Offline: []int32{}}
	if st.Leader >= 0 {
		st.ISR = append(st.ISR, st.Leader)
	}
	for _, r := range replicas {
		if !alive(r) {
			st.Offline = append(st.Offline, r)
		}
	}
	return st
}

// SplitHostPort parses an advertised address for Metadata.
func SplitHostPort(addr string) (string, int32, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("parse address %q: %w", addr, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("parse port of %q: %w", addr, err)
	}
	return host, int32(p), nil
}
