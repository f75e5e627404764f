package node

import (
	"fmt"
	"net"
	"strconv"
)

// Broker is one live broker as Metadata reports it.
type Broker struct {
	ID   int32
	Host string
	Port int32
	Rack string
}

// Cluster is the node's view of the other brokers. The single-node
// implementation knows only this node; the membership layer replaces it with
// one fed by gossip.
type Cluster interface {
	// ClusterID is reported in Metadata v2+.
	ClusterID() string
	// Brokers lists the live brokers, this one included.
	Brokers() []Broker
	// ControllerID is the broker named controller in Metadata; clients
	// send admin requests (CreateTopics, DeleteTopics) there.
	ControllerID() int32
	// Place picks the replicas of each partition of a new topic, in
	// succession order.
	Place(topic string, partitions int32, replicationFactor int16) ([][]int32, error)
}

// localCluster is a cluster of this node alone.
type localCluster struct {
	clusterID string
	self      func() Broker
}

func (c *localCluster) ClusterID() string   { return c.clusterID }
func (c *localCluster) Brokers() []Broker   { return []Broker{c.self()} }
func (c *localCluster) ControllerID() int32 { return c.self().ID }

func (c *localCluster) Place(topic string, partitions int32, rf int16) ([][]int32, error) {
	if rf != 1 {
		return nil, fmt.Errorf("%w: replication factor %d, but this cluster has 1 broker", errReplicationFactor, rf)
	}
	id := c.self().ID
	out := make([][]int32, partitions)
	for i := range out {
		out[i] = []int32{id}
	}
	return out, nil
}

// splitHostPort parses an advertised address for Metadata.
func splitHostPort(addr string) (string, int32, error) {
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
