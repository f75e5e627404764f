package node

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/topicconfig"
)

// brokerConfig is one broker setting as DescribeConfigs reports it for a
// BROKER resource: its value, the value a node started with no flags would
// have, and whether it can change without a restart. None can today: every
// broker setting is a flag read at start, so each is read-only and
// AlterConfigs and IncrementalAlterConfigs refuse to change it.
type brokerConfig struct {
	name, value, def string
	typ              kmsg.ConfigType
	readOnly         bool
}

// source is DEFAULT_CONFIG for a value the node was not told to change and
// STATIC_BROKER_CONFIG for one a flag (or its SPOOL_* variable) set.
func (c brokerConfig) source() kmsg.ConfigSource {
	if c.value == c.def {
		return kmsg.ConfigSourceDefaultConfig
	}
	return kmsg.ConfigSourceStaticBrokerConfig
}

// brokerConfigs lists this node's broker settings under their Kafka names,
// sorted by name.
func (n *Node) brokerConfigs() []brokerConfig {
	c, d := n.cfg, DefaultConfig()
	topic := topicconfig.Default(c.Topic).Describe()
	topicDef := topicconfig.Default(d.Topic).Describe()
	get := func(entries []topicconfig.Entry, name string) string {
		for _, e := range entries {
			if e.Name == name {
				return e.Value
			}
		}
		return ""
	}
	ms := func(v time.Duration) string { return strconv.FormatInt(v.Milliseconds(), 10) }
	// fromTopic is a broker default for a topic config: log.* in Kafka.
	fromTopic := func(name, topicName string, typ kmsg.ConfigType) brokerConfig {
		return brokerConfig{name, get(topic, topicName), get(topicDef, topicName), typ, true}
	}
	advertised := n.access.AdvertisedListenersConfig(n.AdvertisedKafkaAddr())
	return []brokerConfig{
		// A listener's address has no meaningful default: always the node's.
		{"advertised.listeners", advertised, advertised, kmsg.ConfigTypeString, true},
		{"auto.create.topics.enable", strconv.FormatBool(c.AutoCreateTopics), strconv.FormatBool(d.AutoCreateTopics), kmsg.ConfigTypeBoolean, true},
		{"broker.id", strconv.Itoa(int(c.NodeID)), strconv.Itoa(int(d.NodeID)), kmsg.ConfigTypeInt, true},
		{"broker.rack", c.Rack, d.Rack, kmsg.ConfigTypeString, true},
		{"group.initial.rebalance.delay.ms", ms(c.Groups.InitialRebalanceDelay), ms(d.Groups.InitialRebalanceDelay), kmsg.ConfigTypeInt, true},
		{"group.max.session.timeout.ms", ms(c.Groups.MaxSessionTimeout), ms(d.Groups.MaxSessionTimeout), kmsg.ConfigTypeInt, true},
		{"group.min.session.timeout.ms", ms(c.Groups.MinSessionTimeout), ms(d.Groups.MinSessionTimeout), kmsg.ConfigTypeInt, true},
		fromTopic("log.cleanup.policy", "cleanup.policy", kmsg.ConfigTypeList),
		{"log.dirs", c.DataDir, d.DataDir, kmsg.ConfigTypeString, true},
		fromTopic("log.message.timestamp.type", "message.timestamp.type", kmsg.ConfigTypeString),
		{"log.retention.check.interval.ms", ms(c.RetentionCheckInterval), ms(d.RetentionCheckInterval), kmsg.ConfigTypeLong, true},
		fromTopic("log.retention.bytes", "retention.bytes", kmsg.ConfigTypeLong),
		fromTopic("log.retention.ms", "retention.ms", kmsg.ConfigTypeLong),
		fromTopic("log.roll.ms", "segment.ms", kmsg.ConfigTypeLong),
		fromTopic("log.segment.bytes", "segment.bytes", kmsg.ConfigTypeInt),
		fromTopic("message.max.bytes", "max.message.bytes", kmsg.ConfigTypeInt),
		{"num.partitions", strconv.Itoa(int(c.DefaultPartitions)), strconv.Itoa(int(d.DefaultPartitions)), kmsg.ConfigTypeInt, true},
		{"offsets.topic.num.partitions", strconv.Itoa(int(c.Groups.OffsetsTopicPartitions)), strconv.Itoa(int(d.Groups.OffsetsTopicPartitions)), kmsg.ConfigTypeInt, true},
		{"producer.id.expiration.ms", ms(c.ProducerIDExpiry), ms(d.ProducerIDExpiry), kmsg.ConfigTypeInt, true},
		{"socket.request.max.bytes", strconv.Itoa(int(c.MaxRequestBytes)), strconv.Itoa(int(d.MaxRequestBytes)), kmsg.ConfigTypeInt, true},
	}
}

// brokerConfigKnown reports whether name is a broker config Spool describes.
func (n *Node) brokerConfigKnown(name string) (brokerConfig, bool) {
	for _, c := range n.brokerConfigs() {
		if c.name == name {
			return c, true
		}
	}
	return brokerConfig{}, false
}
