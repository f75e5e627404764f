package node

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/topicconfig"
	"github.com/spool-log/spool/wire"
)

// IncrementalAlterConfigs: v0-1
//
// Behavior:
// * Authorization: ALTER_CONFIGS on the topic, else
//   TOPIC_AUTHORIZATION_FAILED; on the cluster for a broker, else
//   CLUSTER_AUTHORIZATION_FAILED.
// * TOPIC resources: each op changes one config of the topic's current
//   set: SET (0) sets it, DELETE (1) returns it to the broker default,
//   APPEND (2) and SUBTRACT (3) add or remove values of a list config
//   (cleanup.policy; on any other config INVALID_CONFIG). Only topic
//   configs Spool knows (node/topicconfig) are accepted: an unknown key, a bad
//   value or a SET with a null value is INVALID_CONFIG and nothing of the
//   resource changes. A key named twice is INVALID_REQUEST. The result is
//   recorded and spread as AlterConfigs does.
// * BROKER resources: every broker setting is read-only (a flag read at
//   start), so any op is INVALID_CONFIG; none is a no-op success.
// * ValidateOnly checks everything and changes nothing.
// * Other resource types are INVALID_REQUEST.
//
// Version notes:
// * v1: flexible versions

func (n *Node) handleIncrementalAlterConfigs(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	who := n.requesterOf(ctx, wreq)
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		err := alterConfigsDenied(who, rr.ResourceType, rr.ResourceName)
		if err == nil {
			switch rr.ResourceType {
			case kmsg.ConfigResourceTypeTopic:
				err = n.incrementalTopicConfigs(rr, req.ValidateOnly)
			case kmsg.ConfigResourceTypeBroker:
				names := make([]string, len(rr.Configs))
				for i, c := range rr.Configs {
					names[i] = c.Name
				}
				err = n.alterBrokerConfigs(rr.ResourceName, names)
			case kmsg.ConfigResourceTypeGroupConfig:
				err = n.alterShareGroupConfigs(who, rr, req.ValidateOnly) // share_group_configs.go
			default:
				err = &topicError{kerr.InvalidRequest, "only TOPIC, BROKER and GROUP resources are supported"}
			}
		}
		sr.ErrorCode, sr.ErrorMessage = n.configErrorCode(rr.ResourceName, err)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

func (n *Node) incrementalTopicConfigs(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	if err := membership.ValidateTopicName(rr.ResourceName); err != nil {
		return &topicError{kerr.InvalidTopicException, err.Error()}
	}
	spec, ok := n.catalog.Topic(rr.ResourceName)
	if !ok {
		return &topicError{kerr.UnknownTopicOrPartition, "unknown topic " + rr.ResourceName}
	}
	seen := make(map[string]bool, len(rr.Configs))
	for _, c := range rr.Configs {
		if seen[c.Name] {
			return &topicError{kerr.InvalidRequest, fmt.Sprintf("config %q named twice", c.Name)}
		}
		seen[c.Name] = true
	}
	effective, err := topicconfig.Parse(n.cfg.Topic, spec.Configs)
	if err != nil {
		return &topicError{kerr.InvalidConfig, err.Error()}
	}
	current := func(name string) string {
		if v, ok := spec.Configs[name]; ok {
			return v
		}
		for _, e := range effective.Describe() {
			if e.Name == name {
				return e.Value
			}
		}
		return ""
	}
	configs := maps.Clone(spec.Configs)
	if configs == nil {
		configs = make(map[string]string)
	}
	for _, c := range rr.Configs {
		typ, known := topicconfig.Keys[c.Name]
		if !known {
			return &topicError{kerr.InvalidConfig, fmt.Sprintf("unknown topic config %q", c.Name)}
		}
		value := ""
		if c.Value != nil {
			value = *c.Value
		}
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if c.Value == nil {
				return &topicError{kerr.InvalidConfig, fmt.Sprintf("SET of %q with a null value", c.Name)}
			}
			configs[c.Name] = value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(configs, c.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if typ != kmsg.ConfigTypeList {
				return &topicError{kerr.InvalidConfig, fmt.Sprintf("%s on %q, which is not a list", c.Op, c.Name)}
			}
			list := splitList(current(c.Name))
			for _, v := range splitList(value) {
				has := slices.Contains(list, v)
				switch {
				case c.Op == kmsg.IncrementalAlterConfigOpAppend && !has:
					list = append(list, v)
				case c.Op == kmsg.IncrementalAlterConfigOpSubtract && has:
					list = slices.DeleteFunc(list, func(x string) bool { return x == v })
				}
			}
			configs[c.Name] = strings.Join(list, ",")
		default:
			return &topicError{kerr.InvalidRequest, fmt.Sprintf("unknown config operation %d on %q", c.Op, c.Name)}
		}
	}
	return topicRefusal(n.parts.SetTopicConfigs(rr.ResourceName, configs, validateOnly))
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
