package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/access"
	"github.com/spool-log/spool/wire"
)

// DeleteTopics: v1-6
//
// Behavior:
// * Quota (KIP-599, node/access/quotas.go): the partitions created or deleted
//   count against the client's controller_mutation_rate. From v5+
//   (strict) a topic is refused with THROTTLING_QUOTA_EXCEEDED while the
//   client is over it; earlier versions are let through. Either way the
//   response carries ThrottleMillis until the client is back within it,
//   and the connection is muted as long. validate_only counts nothing.
// * Authorization: DELETE on the topic, else TOPIC_AUTHORIZATION_FAILED;
//   an id the principal may not DESCRIBE is UNKNOWN_TOPIC_ID, as in Kafka.
// * A tiered topic's objects in the store are deleted once its partitions
//   are dropped here (node/tier.go), in the background.
// * The topic leaves the catalog first (durably: a tombstone that cannot be
//   saved is KAFKA_STORAGE_ERROR and the topic stays), then its local
//   partition directories move to DATA/quarantine; a crash in between is
//   finished at the next start, which quarantines the directories of
//   topics the catalog holds a tombstone of.
// * In-flight fetches on a deleted partition are woken and answered
//   UNKNOWN_TOPIC_OR_PARTITION.
// * The response is sent after local removal; TimeoutMillis is not needed.
// * Internal topics (__consumer_offsets) get INVALID_TOPIC_EXCEPTION: the
//   group coordinator's state lives there. Kafka's broker would delete it
//   (only its kafka-topics tool refuses), losing every group's offsets.
//
// Version notes:
// * v1: ThrottleMillis
// * v4: flexible versions
// * v5: ErrorMessage per topic
// * v6: each topic by name or by id (KIP-516), as Kafka's controller takes
//   them: both given, or neither (a null name and the zero id), is
//   INVALID_REQUEST; an unknown id UNKNOWN_TOPIC_ID. The response names
//   the topic and carries its id.

func (n *Node) handleDeleteTopics(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	who := n.access.Requester(ctx, wreq)
	denied := &topicError{kerr.TopicAuthorizationFailed, "DELETE on the topic is needed"}
	mq := n.access.MutationQuota(ctx, wreq, req.Version >= 5)
	defer func() { resp.ThrottleMillis = mq.Throttle(ctx) }()
	if req.Version < 6 {
		for _, name := range req.TopicNames {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic = kmsg.StringPtr(name)
			if !who.MayTopic(kmsg.ACLOperationDelete, name) {
				deleteTopicResult(&st, denied, req.Version)
				resp.Topics = append(resp.Topics, st)
				continue
			}
			deleteTopicResult(&st, n.deleteTopicQuota(mq, name), req.Version)
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var name string
		switch {
		case rt.Topic != nil && rt.TopicID != TopicID{}:
			deleteTopicResult(&st, &topicError{kerr.InvalidRequest, "you may not specify both topic name and topic id"}, req.Version)
			resp.Topics = append(resp.Topics, st)
			continue
		case rt.Topic != nil:
			name = *rt.Topic
			if !who.MayTopic(kmsg.ACLOperationDelete, name) {
				deleteTopicResult(&st, denied, req.Version)
				resp.Topics = append(resp.Topics, st)
				continue
			}
			if spec, ok := n.catalog.Topic(name); ok {
				st.TopicID = spec.ID
			}
		case rt.TopicID == TopicID{}:
			deleteTopicResult(&st, &topicError{kerr.InvalidRequest, "neither topic name nor id were specified"}, req.Version)
			resp.Topics = append(resp.Topics, st)
			continue
		default:
			spec, ok := n.catalog.TopicByID(rt.TopicID)
			if !ok || !who.MayTopic(kmsg.ACLOperationDescribe, spec.Name) {
				deleteTopicResult(&st, &topicError{kerr.UnknownTopicID, "unknown topic id " + TopicID(rt.TopicID).String()}, req.Version)
				resp.Topics = append(resp.Topics, st)
				continue
			}
			name = spec.Name
			st.Topic = kmsg.StringPtr(name)
			if !who.MayTopic(kmsg.ACLOperationDelete, name) {
				deleteTopicResult(&st, denied, req.Version)
				resp.Topics = append(resp.Topics, st)
				continue
			}
		}
		deleteTopicResult(&st, n.deleteTopicQuota(mq, name), req.Version)
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// deleteTopicResult sets a topic's error code, and from v5 its message.
func deleteTopicResult(st *kmsg.DeleteTopicsResponseTopic, err error, version int16) {
	if err == nil {
		return
	}
	st.ErrorCode = kerrOf(err).Code
	if version >= 5 {
		st.ErrorMessage = kmsg.StringPtr(err.Error())
	}
}

// deleteTopicQuota is a delete (node/hosted's DeleteTopic) under the client's controller mutation
// quota: refused while a strict request's client is over it, its
// partitions counted once deleted.
func (n *Node) deleteTopicQuota(mq access.MutationQuota, name string) error {
	if err := mq.Refused(); err != nil {
		return &topicError{kerr.ThrottlingQuotaExceeded, err.Error()}
	}
	spec, _ := n.catalog.Topic(name)
	if err := topicRefusal(n.parts.DeleteTopic(name)); err != nil {
		return err
	}
	n.loops.Go(func(ctx context.Context) { n.tier.DeleteTopic(ctx, name) }) // node/tier: its objects in the store
	mq.Record(int(spec.Partitions))
	return nil
}
