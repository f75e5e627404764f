package topicconfig

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BrokerConfig is one broker setting as DescribeConfigs reports it for a
// BROKER resource: its value, the value a node started with no flags would
// have, and whether it can change without a restart. None can today: every
// broker setting is a flag read at start, so each is read-only and
// AlterConfigs and IncrementalAlterConfigs refuse to change it.
type BrokerConfig struct {
	Name, Value, Default string
	Type                 kmsg.ConfigType
	ReadOnly             bool
}

// Source is DEFAULT_CONFIG for a value the node was not told to change and
// STATIC_BROKER_CONFIG for one a flag (or its SPOOL_* variable) set.
func (c BrokerConfig) Source() kmsg.ConfigSource {
	if c.Value == c.Default {
		return kmsg.ConfigSourceDefaultConfig
	}
	return kmsg.ConfigSourceStaticBrokerConfig
}

// Broker is the node's settings DescribeConfigs reports, as its Config
// holds them.
type Broker struct {
	AdvertisedListeners    string
	AutoCreateTopics       bool
	NodeID                 int32
	Rack                   string
	InitialRebalanceDelay  time.Duration
	MaxSessionTimeout      time.Duration
	MinSessionTimeout      time.Duration
	Topic                  Defaults
	DataDir                string
	RetentionCheckInterval time.Duration
	DefaultPartitions      int32
	OffsetsTopicPartitions int32
	ProducerIDExpiry       time.Duration
	MaxRequestBytes        int32
}

// BrokerConfigs lists the broker settings c under their Kafka names, sorted
// by name, d the defaults (a node started with no flags). A listener's
// address has no meaningful default: always the node's.
func BrokerConfigs(c, d Broker) []BrokerConfig {
	topic := Default(c.Topic).Describe()
	topicDef := Default(d.Topic).Describe()
	get := func(entries []Entry, name string) string {
		for _, e := range entries {
			if e.Name == name {
				return e.Value
			}
		}
		return ""
	}
	ms := func(v time.Duration) string { return strconv.FormatInt(v.Milliseconds(), 10) }
	// fromTopic is a broker default for a topic config: log.* in Kafka.
	fromTopic := func(name, topicName string, typ kmsg.ConfigType) BrokerConfig {
		return BrokerConfig{name, get(topic, topicName), get(topicDef, topicName), typ, true}
	}
	return []BrokerConfig{
		{"advertised.listeners", c.AdvertisedListeners, c.AdvertisedListeners, kmsg.ConfigTypeString, true},
		{"auto.create.topics.enable", strconv.FormatBool(c.AutoCreateTopics), strconv.FormatBool(d.AutoCreateTopics), kmsg.ConfigTypeBoolean, true},
		{"broker.id", strconv.Itoa(int(c.NodeID)), strconv.Itoa(int(d.NodeID)), kmsg.ConfigTypeInt, true},
		{"broker.rack", c.Rack, d.Rack, kmsg.ConfigTypeString, true},
		{"group.initial.rebalance.delay.ms", ms(c.InitialRebalanceDelay), ms(d.InitialRebalanceDelay), kmsg.ConfigTypeInt, true},
		{"group.max.session.timeout.ms", ms(c.MaxSessionTimeout), ms(d.MaxSessionTimeout), kmsg.ConfigTypeInt, true},
		{"group.min.session.timeout.ms", ms(c.MinSessionTimeout), ms(d.MinSessionTimeout), kmsg.ConfigTypeInt, true},
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
		{"offsets.topic.num.partitions", strconv.Itoa(int(c.OffsetsTopicPartitions)), strconv.Itoa(int(d.OffsetsTopicPartitions)), kmsg.ConfigTypeInt, true},
		{"producer.id.expiration.ms", ms(c.ProducerIDExpiry), ms(d.ProducerIDExpiry), kmsg.ConfigTypeInt, true},
		{"socket.request.max.bytes", strconv.Itoa(int(c.MaxRequestBytes)), strconv.Itoa(int(d.MaxRequestBytes)), kmsg.ConfigTypeInt, true},
	}
}

// FindBrokerConfig is the config of configs named name, if any.
func FindBrokerConfig(configs []BrokerConfig, name string) (BrokerConfig, bool) {
	for _, c := range configs {
		if c.Name == name {
			return c, true
		}
	}
	return BrokerConfig{}, false
}
