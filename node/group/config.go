package group

import (
	"time"

	"github.com/sirupsen/logrus"
)

// TopicName is the internal topic that stores committed offsets and group
// metadata, compacted by key.
const TopicName = "__consumer_offsets"

// Config tunes the coordinator. The zero value is not usable; start from
// DefaultConfig.
type Config struct {
	// Partitions is the number of partitions of __consumer_offsets
	// (Kafka's offsets.topic.num.partitions). It decides which partition,
	// and so which node, coordinates a group; it must never change once
	// groups exist.
	Partitions int32

	// InitialRebalanceDelay is how long the first rebalance of an empty
	// group waits for more members before it completes, extended by the
	// same amount each time a new member arrives, up to the rebalance
	// timeout (Kafka's group.initial.rebalance.delay.ms). Zero completes
	// the first rebalance as soon as every known member has joined.
	InitialRebalanceDelay time.Duration

	// MinSessionTimeout and MaxSessionTimeout bound the session timeout a
	// member may ask for (group.min/max.session.timeout.ms); outside them
	// JoinGroup answers INVALID_SESSION_TIMEOUT.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration

	// MaxGroupSize caps members (joined plus pending) per group
	// (group.max.size); beyond it JoinGroup answers GROUP_MAX_SIZE_REACHED.
	MaxGroupSize int

	// MaxMetadataBytes caps the metadata string of a committed offset
	// (offset.metadata.max.bytes); beyond it OFFSET_METADATA_TOO_LARGE.
	MaxMetadataBytes int

	// PartitionCount, if set, reports how many partitions a topic has so
	// that commits to unknown topics or partitions are refused with
	// UNKNOWN_TOPIC_OR_PARTITION, as Kafka does. Nil accepts every commit.
	PartitionCount func(topic string) (int32, bool)

	// Topic and TopicName resolve topics for the consumer protocol
	// (KIP-848), whose assignments name topics by id: a topic's id and
	// partition count, and the name of an id. Nil knows no topics, so
	// consumer-protocol members are assigned nothing.
	Topic     func(name string) (id [16]byte, partitions int32, ok bool)
	TopicName func(id [16]byte) (string, bool)
	// TopicNames lists the topics a subscription by regular expression
	// (SubscribedTopicRegex) is matched against: every live topic but the
	// internal ones, as Kafka does. Nil matches nothing.
	TopicNames func() []string

	// ConsumerSessionTimeout is how long a consumer-protocol member may go
	// without a heartbeat before it is fenced and its partitions move
	// (group.consumer.session.timeout.ms); ConsumerHeartbeatInterval is
	// the interval the coordinator asks those members to heartbeat at
	// (group.consumer.heartbeat.interval.ms).
	ConsumerSessionTimeout    time.Duration
	ConsumerHeartbeatInterval time.Duration

	// Clock drives session, rebalance and join-delay timers. Tests inject
	// a manual clock; nil means the wall clock.
	Clock Clock

	// Logger receives state transitions and storage errors.
	Logger logrus.FieldLogger
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		Partitions:            50,
		InitialRebalanceDelay: 3 * time.Second,
		MinSessionTimeout:     6 * time.Second,
		MaxSessionTimeout:     30 * time.Minute,
		MaxGroupSize:          10000,
		MaxMetadataBytes:      4096,

		ConsumerSessionTimeout:    45 * time.Second,
		ConsumerHeartbeatInterval: 5 * time.Second,
	}
}
