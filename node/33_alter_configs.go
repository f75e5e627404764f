package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/authz"
	"github.com/spool-log/spool/wire"
)

// AlterConfigs: v0-2
//
// Behavior:
// * Authorization: ALTER_CONFIGS on the topic, else
//   TOPIC_AUTHORIZATION_FAILED; on the cluster for a broker, else
//   CLUSTER_AUTHORIZATION_FAILED.
// * TOPIC resources: the topic's configs become exactly the ones given
//   (keys left out return to the broker default), as in Kafka. Only topic
//   configs Spool knows (node/topicconfig) are accepted; any other key, a bad
//   value or a null value is INVALID_CONFIG and nothing changes. The change
//   is recorded in the catalog under the topic's id and gossiped; every
//   node applies it to its open partitions (retention, segments,
//   compaction, max.message.bytes, timestamp type).
// * BROKER resources (this node's id, or "" for the cluster default): every
//   broker setting is a flag read at start, so any config given is refused
//   (INVALID_CONFIG for one Spool has, read-only; INVALID_CONFIG for an
//   unknown one); none given is a no-op success.
// * ValidateOnly checks everything and changes nothing.
// * Other resource types are INVALID_REQUEST; an unknown topic is
//   UNKNOWN_TOPIC_OR_PARTITION.
//
// Version notes:
// * v1: ThrottleMillis
// * v2: flexible versions

func (n *Node) handleAlterConfigs(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	who := n.access.Requester(ctx, wreq)
	for _, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		err := alterConfigsDenied(who, rr.ResourceType, rr.ResourceName)
		if err == nil {
			switch rr.ResourceType {
			case kmsg.ConfigResourceTypeTopic:
				configs := make(map[string]string, len(rr.Configs))
				for _, c := range rr.Configs {
					if c.Value == nil {
						err = &topicError{kerr.InvalidConfig, fmt.Sprintf("config %q has a null value", c.Name)}
						break
					}
					if _, dup := configs[c.Name]; dup {
						err = &topicError{kerr.InvalidRequest, fmt.Sprintf("config %q given twice", c.Name)}
						break
					}
					configs[c.Name] = *c.Value
				}
				if err == nil {
					err = topicRefusal(n.parts.SetTopicConfigs(rr.ResourceName, configs, req.ValidateOnly))
				}
			case kmsg.ConfigResourceTypeBroker:
				names := make([]string, len(rr.Configs))
				for i, c := range rr.Configs {
					names[i] = c.Name
				}
				err = alterBrokerConfigs(n.cfg, n.access.AdvertisedListenersConfig(n.AdvertisedKafkaAddr()), rr.ResourceName, names)
			default:
				err = &topicError{kerr.InvalidRequest, "only TOPIC and BROKER resources are supported"}
			}
		}
		sr.ErrorCode, sr.ErrorMessage = configErrorCode(n.log, rr.ResourceName, err)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

// configErrorCode turns an alteration's error into the response's code and
// message.
func configErrorCode(log logrus.FieldLogger, resource string, err error) (int16, *string) {
	if err == nil {
		return 0, nil
	}
	var te *topicError
	if !errors.As(err, &te) {
		log.WithError(err).WithField("resource", resource).Error("alter configs")
		te = &topicError{kerr.UnknownServerError, err.Error()}
	}
	msg := te.msg
	return te.err.Code, &msg
}

// alterConfigsDenied is the refusal of AlterConfigs and
// IncrementalAlterConfigs for a resource the requester may not
// ALTER_CONFIGS, nil when it may (or the resource type is one the
// handler refuses anyway).
func alterConfigsDenied(who authz.Requester, rt kmsg.ConfigResourceType, name string) error {
	switch rt {
	case kmsg.ConfigResourceTypeTopic:
		if !who.MayTopic(kmsg.ACLOperationAlterConfigs, name) {
			return &topicError{kerr.TopicAuthorizationFailed, "ALTER_CONFIGS on the topic is needed"}
		}
	case kmsg.ConfigResourceTypeBroker:
		if !who.MayCluster(kmsg.ACLOperationAlterConfigs) {
			return &topicError{kerr.ClusterAuthorizationFailed, "ALTER_CONFIGS on the cluster is needed"}
		}
	}
	return nil
}
