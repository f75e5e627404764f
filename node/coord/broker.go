package coord

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/spool-log/spool/node/hosted"
)

// Broker is what the coordinators need of the node that hosts them; the
// node passes an adapter.
type Broker interface {
	NodeID() int32
	// Closing reports that the node has begun shutting down.
	Closing() bool

	// Topic is the catalog's word on a topic: its id and partition count.
	Topic(name string) (Topic, bool)
	// TopicName is the name of the topic with id.
	TopicName(id [16]byte) (string, bool)
	// TopicNames lists every topic of the catalog.
	TopicNames() []string
	// HostsReplica tells whether this node is a replica of topic's
	// partition p (or one a move is adding).
	HostsReplica(topic string, p int32) bool
	// CreateTopic creates an internal topic; one that exists already
	// (another node made it first) is no error.
	CreateTopic(name string, partitions int32, rf int16, configs map[string]string) error
	// ClusterFactor is the replication factor the cluster gives a topic
	// configured with factor configured: capped by the roster rather than
	// by the brokers alive now, and odd.
	ClusterFactor(configured int) int16

	// LeaderOf is the broker that leads topic's partition p (the node's one
	// answer to who leads a partition), -1 for none known.
	LeaderOf(topic string, p int32) int32
	// Leader is the partition if this node leads it, else the error a
	// client should get (UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE,
	// NOT_LEADER_OR_FOLLOWER).
	Leader(topic string, p int32) (*hosted.Partition, *kerr.Error)
	// Hosted is the partition of the catalog's current incarnation of
	// topic if it is open here, led or not; nil otherwise.
	Hosted(topic string, p int32) *hosted.Partition

	// PostToBroker forwards a request to another broker's admin listener
	// (node/peers' PostToBroker).
	PostToBroker(ctx context.Context, broker int32, path string, req any, limit int64, out any) error
	// Go runs fn under the owner of the node's background goroutines,
	// until the node stops; false once it has.
	Go(fn func(ctx context.Context)) bool

	// Setting and SetSetting read and write a cluster-wide setting
	// (gossiped to every node): the share groups' configs.
	Setting(name string) (string, bool)
	SetSetting(name, value string) error
}

// Topic is what the coordinators know of a topic.
type Topic struct {
	ID         [16]byte
	Partitions int32
}

// Metrics takes the counters and gauges the coordinators emit.
type Metrics interface {
	IncrCounter(key []string, val float32)
	SetGauge(key []string, val float32)
}
