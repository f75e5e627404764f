package node

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// DeleteTopics: v1-4
//
// Behavior:
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
// * v5+ (ErrorMessage) and v6+ (topic ids) are not advertised.

func (n *Node) handleDeleteTopics(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	for _, name := range req.TopicNames {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic = kmsg.StringPtr(name)
		if err := n.deleteTopic(name); err != nil {
			st.ErrorCode = kerrOf(err).Code
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (n *Node) deleteTopic(name string) error {
	if err := ValidateTopicName(name); err != nil {
		return &topicError{kerr.InvalidTopicException, err.Error()}
	}
	if isInternalTopic(name) {
		return &topicError{kerr.InvalidTopicException, "topic " + name + " is internal and cannot be deleted"}
	}
	n.createMu.Lock()
	defer n.createMu.Unlock()
	if _, err := n.catalog.Delete(name); err != nil {
		if errors.Is(err, ErrUnknownTopic) {
			return &topicError{kerr.UnknownTopicOrPartition, "unknown topic " + name}
		}
		n.log.WithError(err).WithField("topic", name).Error("delete topic")
		return err
	}
	if err := n.reconcile(); err != nil {
		n.log.WithError(err).Warn("reconcile after delete")
	}
	n.log.WithField("topic", name).Info("topic deleted")
	return nil
}
