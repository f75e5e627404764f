package node

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// DescribeConfigs: v1-4
//
// Behavior:
// * TOPIC resources list every topic config Spool knows (retention.ms,
//   retention.bytes, segment.bytes, segment.ms, message.timestamp.type,
//   max.message.bytes, cleanup.policy, delete.retention.ms,
//   min.cleanable.dirty.ratio), with source DYNAMIC_TOPIC_CONFIG for
//   what the topic set and DEFAULT_CONFIG for broker defaults.
// * BROKER resources (this node's id, or "" for the defaults) list a small,
//   read-only set of static broker settings.
// * ConfigNames filters; null means all. Other resource types get
//   INVALID_REQUEST.
//
// Version notes:
// * v1: ConfigSource and ConfigSynonyms (IncludeSynonyms)
// * v2: same as v1
// * v3: ConfigType, Documentation (IncludeDocumentation; none given)
// * v4: flexible versions

func (n *Node) handleDescribeConfigs(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType = rr.ResourceType
		sr.ResourceName = rr.ResourceName
		want := func(name string) bool {
			if rr.ConfigNames == nil {
				return true
			}
			for _, w := range rr.ConfigNames {
				if w == name {
					return true
				}
			}
			return false
		}
		add := func(name, value string, src kmsg.ConfigSource, typ kmsg.ConfigType, readOnly bool) {
			if !want(name) {
				return
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name = name
			v := value
			c.Value = &v
			c.Source = src
			c.ReadOnly = readOnly
			c.IsDefault = src == kmsg.ConfigSourceDefaultConfig || src == kmsg.ConfigSourceStaticBrokerConfig
			c.ConfigType = typ
			if req.IncludeSynonyms {
				syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				syn.Name, syn.Value, syn.Source = name, &v, src
				c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
			}
			sr.Configs = append(sr.Configs, c)
		}

		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if err := ValidateTopicName(rr.ResourceName); err != nil {
				sr.ErrorCode = kerr.InvalidTopicException.Code
				msg := err.Error()
				sr.ErrorMessage = &msg
				break
			}
			spec, ok := n.catalog.Topic(rr.ResourceName)
			if !ok {
				sr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				break
			}
			settings, err := parseTopicConfigs(n.cfg.Topic, spec.Configs)
			if err != nil {
				sr.ErrorCode = kerr.InvalidConfig.Code
				msg := err.Error()
				sr.ErrorMessage = &msg
				break
			}
			for _, e := range settings.describe() {
				src := kmsg.ConfigSourceDefaultConfig
				if _, ok := spec.Configs[e.Name]; ok {
					src = kmsg.ConfigSourceDynamicTopicConfig
				}
				add(e.Name, e.Value, src, topicConfigKeys[e.Name], false)
			}
		case kmsg.ConfigResourceTypeBroker:
			if rr.ResourceName != "" && rr.ResourceName != strconv.Itoa(int(n.cfg.NodeID)) {
				sr.ErrorCode = kerr.InvalidRequest.Code
				msg := "this is broker " + strconv.Itoa(int(n.cfg.NodeID))
				sr.ErrorMessage = &msg
				break
			}
			for _, c := range n.brokerConfigs() {
				add(c.name, c.value, kmsg.ConfigSourceStaticBrokerConfig, c.typ, true)
			}
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
			msg := "only TOPIC and BROKER resources are supported"
			sr.ErrorMessage = &msg
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

type brokerConfig struct {
	name, value string
	typ         kmsg.ConfigType
}

func (n *Node) brokerConfigs() []brokerConfig {
	d := defaultSettings(n.cfg.Topic)
	topic := d.describe()
	get := func(name string) string {
		for _, e := range topic {
			if e.Name == name {
				return e.Value
			}
		}
		return ""
	}
	return []brokerConfig{
		{"advertised.listeners", "PLAINTEXT://" + n.AdvertisedKafkaAddr(), kmsg.ConfigTypeString},
		{"auto.create.topics.enable", strconv.FormatBool(n.cfg.AutoCreateTopics), kmsg.ConfigTypeBoolean},
		{"broker.id", strconv.Itoa(int(n.cfg.NodeID)), kmsg.ConfigTypeInt},
		{"broker.rack", n.cfg.Rack, kmsg.ConfigTypeString},
		{"log.dirs", n.cfg.DataDir, kmsg.ConfigTypeString},
		{"log.message.timestamp.type", get("message.timestamp.type"), kmsg.ConfigTypeString},
		{"log.retention.bytes", get("retention.bytes"), kmsg.ConfigTypeLong},
		{"log.retention.ms", get("retention.ms"), kmsg.ConfigTypeLong},
		{"log.segment.bytes", get("segment.bytes"), kmsg.ConfigTypeInt},
		{"message.max.bytes", get("max.message.bytes"), kmsg.ConfigTypeInt},
		{"num.partitions", strconv.Itoa(int(n.cfg.DefaultPartitions)), kmsg.ConfigTypeInt},
		{"socket.request.max.bytes", strconv.Itoa(int(n.cfg.MaxRequestBytes)), kmsg.ConfigTypeInt},
	}
}
