package node

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/topicconfig"
	"github.com/spool-log/spool/wire"
)

// DescribeConfigs: v1-4
//
// Behavior:
// * Authorization: DESCRIBE_CONFIGS on the topic, else
//   TOPIC_AUTHORIZATION_FAILED; on the cluster for a broker, else
//   CLUSTER_AUTHORIZATION_FAILED.
// * TOPIC resources list every topic config Spool knows (retention.ms,
//   retention.bytes, segment.bytes, segment.ms, message.timestamp.type,
//   max.message.bytes, cleanup.policy, delete.retention.ms,
//   min.cleanable.dirty.ratio), with source DYNAMIC_TOPIC_CONFIG for
//   what the topic set and DEFAULT_CONFIG for broker defaults.
// * BROKER resources (this node's id, or "" for the defaults) list every
//   broker setting Spool has (broker_configs.go), each read-only (all are
//   flags read at start), with source DEFAULT_CONFIG when it has its default
//   value and STATIC_BROKER_CONFIG when a flag set it; with IncludeSynonyms
//   a set one also lists its default.
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
	who := n.access.Requester(ctx, wreq)
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
		add := func(name, value string, src kmsg.ConfigSource, typ kmsg.ConfigType, readOnly bool, def ...string) {
			if !want(name) {
				return
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name = name
			v := value
			c.Value = &v
			c.Source = src
			c.ReadOnly = readOnly
			c.IsDefault = src == kmsg.ConfigSourceDefaultConfig
			c.ConfigType = typ
			if req.IncludeSynonyms {
				syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				syn.Name, syn.Value, syn.Source = name, &v, src
				c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
				if src == kmsg.ConfigSourceStaticBrokerConfig && len(def) > 0 {
					// Kafka lists every layer, highest precedence first.
					dsyn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
					dsyn.Name, dsyn.Value, dsyn.Source = name, &def[0], kmsg.ConfigSourceDefaultConfig
					c.ConfigSynonyms = append(c.ConfigSynonyms, dsyn)
				}
			}
			sr.Configs = append(sr.Configs, c)
		}

		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if !who.MayTopic(kmsg.ACLOperationDescribeConfigs, rr.ResourceName) {
				sr.ErrorCode = kerr.TopicAuthorizationFailed.Code
				sr.ErrorMessage = kmsg.StringPtr("DESCRIBE_CONFIGS on the topic is needed")
				break
			}
			if err := membership.ValidateTopicName(rr.ResourceName); err != nil {
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
			settings, err := topicconfig.Parse(n.cfg.Topic, spec.Configs)
			if err != nil {
				sr.ErrorCode = kerr.InvalidConfig.Code
				msg := err.Error()
				sr.ErrorMessage = &msg
				break
			}
			for _, e := range settings.Describe() {
				src := kmsg.ConfigSourceDefaultConfig
				if _, ok := spec.Configs[e.Name]; ok {
					src = kmsg.ConfigSourceDynamicTopicConfig
				}
				add(e.Name, e.Value, src, topicconfig.Keys[e.Name], false)
			}
		case kmsg.ConfigResourceTypeBroker:
			if !who.MayCluster(kmsg.ACLOperationDescribeConfigs) {
				sr.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				sr.ErrorMessage = kmsg.StringPtr("DESCRIBE_CONFIGS on the cluster is needed")
				break
			}
			if rr.ResourceName != "" && rr.ResourceName != strconv.Itoa(int(n.cfg.NodeID)) {
				sr.ErrorCode = kerr.InvalidRequest.Code
				msg := "this is broker " + strconv.Itoa(int(n.cfg.NodeID))
				sr.ErrorMessage = &msg
				break
			}
			for _, c := range brokerConfigs(n.cfg, n.access.AdvertisedListenersConfig(n.AdvertisedKafkaAddr())) { // config.go
				add(c.Name, c.Value, c.Source(), c.Type, c.ReadOnly, c.Default)
			}
		case kmsg.ConfigResourceTypeGroupConfig:
			if !who.MayGroup(kmsg.ACLOperationDescribeConfigs, rr.ResourceName) {
				sr.ErrorCode, sr.ErrorMessage = kerr.GroupAuthorizationFailed.Code, kmsg.StringPtr("DESCRIBE_CONFIGS on the group is needed")
				break
			}
			sr.ErrorCode, sr.ErrorMessage = n.coords.Shares.DescribeConfigs(rr.ResourceName, add) // KIP-932's share.* (node/share)
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
			msg := "only TOPIC, BROKER and GROUP resources are supported"
			sr.ErrorMessage = &msg
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}
