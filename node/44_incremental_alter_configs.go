package node

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/share"
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
	who := n.access.Requester(ctx, wreq)
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		err := alterConfigsDenied(who, rr.ResourceType, rr.ResourceName)
		if err == nil {
			switch rr.ResourceType {
			case kmsg.ConfigResourceTypeTopic:
				var configs map[string]string
				if configs, err = n.catalog.ConfigsAfter(rr.ResourceName, rr.Configs, n.cfg.Topic); err == nil {
					err = n.parts.SetTopicConfigs(rr.ResourceName, configs, req.ValidateOnly)
				}
				err = topicRefusal(err)
			case kmsg.ConfigResourceTypeBroker:
				names := make([]string, len(rr.Configs))
				for i, c := range rr.Configs {
					names[i] = c.Name
				}
				err = alterBrokerConfigs(n.cfg, n.access.AdvertisedListenersConfig(n.AdvertisedKafkaAddr()), rr.ResourceName, names)
			case kmsg.ConfigResourceTypeGroupConfig:
				var ce *share.ConfigError // KIP-932's share.* (node/share)
				if !who.MayGroup(kmsg.ACLOperationAlterConfigs, rr.ResourceName) {
					err = &topicError{kerr.GroupAuthorizationFailed, "ALTER_CONFIGS on the group is needed"}
				} else if err = n.coords.Shares.AlterConfigs(rr, req.ValidateOnly); errors.As(err, &ce) {
					err = &topicError{ce.Err, ce.Msg}
				}
			default:
				err = &topicError{kerr.InvalidRequest, "only TOPIC, BROKER and GROUP resources are supported"}
			}
		}
		sr.ErrorCode, sr.ErrorMessage = configErrorCode(n.log, rr.ResourceName, err)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}
