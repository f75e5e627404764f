package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/authz"
	"github.com/spool-log/spool/node/topics"
	"github.com/spool-log/spool/wire"
)

// Metadata: v1-13
//
// Behavior:
// * Any node answers from its cluster view: brokers are the live members
//   gossip knows (id, advertised Kafka address, rack); the controller is
//   the answering node, since every node serves CreateTopics/DeleteTopics.
// * Null topics lists every topic; an empty list lists none.
// * Per partition: replicas in succession order (as placed at creation).
//   Leader, leader epoch, ISR and offline replicas are this node's replica's
//   (node/replica) where it leads the partition; else the leader's own
//   claim, which every node pulls from every other (node/leadership: a
//   version in a gossip tag, then a pull; stale for a moment after a
//   change), or this node's replica's view if newer; with neither (no
//   claim yet, or the claiming node gone for a few seconds) the cluster
//   view, with the epoch unknown (-1) and offline = the replicas not
//   alive. Until replication lands the data is on the first replica only,
//   so it leads while alive and ISR = [leader]; with the first replica
//   down the partition has no leader (-1) and LEADER_NOT_AVAILABLE, never
//   a silently moved, empty one.
// * Unknown topics are auto-created when the node allows it and the request
//   does (AllowAutoTopicCreation, v4+; always for v1-3). Invalid names get
//   INVALID_TOPIC_EXCEPTION and are never created.
// * Topics can be asked for by id (v10+); an unknown id gets UNKNOWN_TOPIC_ID.
// * Authorization (Kafka's): the full list holds only the topics the
//   principal may DESCRIBE; a topic asked for by name that it may not
//   describe gets TOPIC_AUTHORIZATION_FAILED, existing or not, and by id
//   UNKNOWN_TOPIC_ID; auto-creation needs CREATE on the cluster or the
//   topic, else TOPIC_AUTHORIZATION_FAILED. Brokers and the cluster id
//   are for everyone.
// * __consumer_offsets is IsInternal. Auto-creating it makes it as the group
//   coordinator would (its partition count and configs), never with the
//   ordinary topic defaults.
//
// Version notes:
// * v1: ControllerID, IsInternal, Rack
// * v2: ClusterID
// * v3: ThrottleMillis
// * v4: AllowAutoTopicCreation
// * v5: OfflineReplicas
// * v7: LeaderEpoch
// * v8: AuthorizedOperations of each topic and (v8-10) of the cluster, when
//   asked for: the operations the principal may do
// * v9: flexible versions
// * v10: TopicID
// * v11: ClusterAuthorizedOperations removed (IncludeClusterAuthorizedOperations
//   is no longer sent)
// * v12: a topic asked for by id has a null name in the request
// * v13: top-level ErrorCode (KIP-1102: REBOOTSTRAP_REQUIRED when the
//   broker sees the client is lost); always 0 here, as a Kafka broker
//   that can answer the request at all

func (n *Node) handleMetadata(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)

	brokers := n.cluster.BrokersOn(n.access.ListenerName(ctx))
	live := make(map[int32]bool, len(brokers))
	for _, b := range brokers {
		live[b.ID] = true
		sb := kmsg.NewMetadataResponseBroker()
		sb.NodeID = b.ID
		sb.Host = b.Host
		sb.Port = b.Port
		if b.Rack != "" {
			rack := b.Rack
			sb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, sb)
	}
	clusterID := n.cluster.ClusterID()
	resp.ClusterID = &clusterID
	resp.ControllerID = n.cluster.ControllerID()

	allowAuto := n.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	who := n.access.Requester(ctx, wreq)
	if req.IncludeClusterAuthorizedOperations && req.Version <= 10 {
		resp.AuthorizedOperations = who.AuthorizedOperations(clusterAuthorizedOperations, kmsg.ACLResourceTypeCluster, authz.ClusterName)
	}

	addTopic := func(spec TopicSpec) {
		st := kmsg.NewMetadataResponseTopic()
		st.Topic = kmsg.StringPtr(spec.Name)
		st.TopicID = spec.ID
		st.IsInternal = topics.IsInternal(spec.Name)
		if req.IncludeTopicAuthorizedOperations {
			st.AuthorizedOperations = who.AuthorizedOperations(authz.TopicOperations, kmsg.ACLResourceTypeTopic, spec.Name)
		}
		for i, replicas := range spec.Replicas {
			sp := kmsg.NewMetadataResponseTopicPartition()
			sp.Partition = int32(i)
			sp.Replicas = append([]int32(nil), replicas...)
			ls := n.leaders.Of(spec, int32(i), func(id int32) bool { return live[id] })
			sp.Leader, sp.LeaderEpoch, sp.ISR, sp.OfflineReplicas = ls.Leader, ls.LeaderEpoch, ls.ISR, ls.Offline
			if sp.Leader < 0 {
				sp.ErrorCode = kerr.LeaderNotAvailable.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	addError := func(name *string, id TopicID, e *kerr.Error) {
		st := kmsg.NewMetadataResponseTopic()
		st.Topic = name
		st.TopicID = id
		st.ErrorCode = e.Code
		resp.Topics = append(resp.Topics, st)
	}

	if req.Topics == nil {
		for _, spec := range n.catalog.Topics() {
			if who.MayTopic(kmsg.ACLOperationDescribe, spec.Name) {
				addTopic(spec)
			}
		}
		return resp
	}
	seen := make(map[string]bool, len(req.Topics))
	for _, rt := range req.Topics {
		var spec TopicSpec
		var ok bool
		switch {
		case rt.Topic == nil && rt.TopicID != (TopicID{}):
			if spec, ok = n.catalog.TopicByID(rt.TopicID); !ok || !who.MayTopic(kmsg.ACLOperationDescribe, spec.Name) {
				addError(nil, rt.TopicID, kerr.UnknownTopicID)
				continue
			}
		case rt.Topic == nil:
			continue
		default:
			name := *rt.Topic
			if err := membership.ValidateTopicName(name); err != nil {
				addError(kmsg.StringPtr(name), TopicID{}, kerr.InvalidTopicException)
				continue
			}
			if !who.MayTopic(kmsg.ACLOperationDescribe, name) {
				addError(kmsg.StringPtr(name), TopicID{}, kerr.TopicAuthorizationFailed)
				continue
			}
			if spec, ok = n.catalog.Topic(name); !ok {
				if allowAuto && !who.MayCreateTopic(name) {
					addError(kmsg.StringPtr(name), TopicID{}, kerr.TopicAuthorizationFailed)
					continue
				}
				if !allowAuto {
					addError(kmsg.StringPtr(name), TopicID{}, kerr.UnknownTopicOrPartition)
					continue
				}
				if e := kerrOf(n.parts.AutoCreate(name)); e != nil {
					addError(kmsg.StringPtr(name), TopicID{}, e)
					continue
				}
				if spec, ok = n.catalog.Topic(name); !ok {
					// Deleted again between creation and now.
					addError(kmsg.StringPtr(name), TopicID{}, kerr.UnknownTopicOrPartition)
					continue
				}
			}
		}
		if seen[spec.Name] {
			continue
		}
		seen[spec.Name] = true
		addTopic(spec)
	}
	return resp
}
