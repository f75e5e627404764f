package node

import (
	"errors"
	"fmt"
	"maps"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/spool-log/spool/internal/recordbatch/compression"
	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/replication"
	"github.com/spool-log/spool/node/topicconfig"
)

// Alterations of a live topic (CreatePartitions, AlterConfigs,
// IncrementalAlterConfigs): the membership catalog replaces the topic's
// entry under the same id with a newer Lamport time, so every node keeps the
// partitions it holds, opens the ones added and applies the new configs when
// gossip brings the entry.

// growTopic raises a topic's partition count to total (CreatePartitions).
// assignment, when not nil, gives the replicas of each new partition.
func (n *Node) growTopic(name string, total int32, assignment [][]int32, validateOnly bool) error {
	if err := membership.ValidateTopicName(name); err != nil {
		return &topicError{kerr.InvalidTopicException, err.Error()}
	}
	if isInternalTopic(name) {
		// Groups are hashed over the offsets topic's partition count:
		// growing it would move every group's coordinator and lose
		// their offsets (Kafka refuses it too).
		return &topicError{kerr.InvalidRequest, "the partition count of internal topic " + name + " cannot change"}
	}
	if total > maxPartitionsPerTopic {
		return &topicError{kerr.InvalidPartitions, fmt.Sprintf("partitions must be at most %d", maxPartitionsPerTopic)}
	}
	add := n.agent.GrowPartitions(total, assignment)
	grow := func(e *membership.TopicEntry) error {
		// More partitions of an even factor would be more partitions
		// that survive no more than one copy fewer (node/replication's factor.go).
		if e.ReplicationFactor%2 == 0 {
			return fmt.Errorf("%w: %s", membership.ErrInvalidReplicationFactor, replication.EvenFactorReason(int(e.ReplicationFactor)))
		}
		return add(e)
	}
	change := grow
	if validateOnly {
		change = func(e *membership.TopicEntry) error {
			if err := grow(e); err != nil {
				return err
			}
			return errValidateOnly
		}
	}
	spec, err := n.catalog.Alter(name, change)
	switch {
	case errors.Is(err, errValidateOnly):
		return nil
	case err != nil:
		return alterError(name, err)
	}
	if err := n.reconcileTopic(name); err != nil {
		return fmt.Errorf("open new partitions of %s: %w", name, err)
	}
	n.log.WithFields(logrus.Fields{"topic": name, "partitions": spec.Partitions}).Info("topic partitions added")
	return nil
}

// setTopicConfigs replaces a topic's configs with configs (AlterConfigs, and
// IncrementalAlterConfigs after it has applied its operations). Unknown keys
// and bad values are INVALID_CONFIG; nothing is stored then.
func (n *Node) setTopicConfigs(name string, configs map[string]string, validateOnly bool) error {
	if err := membership.ValidateTopicName(name); err != nil {
		return &topicError{kerr.InvalidTopicException, err.Error()}
	}
	if _, err := topicconfig.Parse(n.cfg.Topic, configs); err != nil {
		return &topicError{kerr.InvalidConfig, err.Error()}
	}
	if _, ok := n.catalog.Topic(name); !ok {
		return &topicError{kerr.UnknownTopicOrPartition, "unknown topic " + name}
	}
	if validateOnly {
		return nil
	}
	_, err := n.catalog.Alter(name, func(e *membership.TopicEntry) error {
		e.Config = maps.Clone(configs)
		return nil
	})
	if err != nil {
		return alterError(name, err)
	}
	n.applyTopicConfigs()
	n.log.WithFields(logrus.Fields{"topic": name, "configs": configs}).Info("topic configs changed")
	return nil
}

var errValidateOnly = errors.New("validate only")

func alterError(name string, err error) error {
	switch {
	case errors.Is(err, membership.ErrUnknownTopic):
		return &topicError{kerr.UnknownTopicOrPartition, "unknown topic " + name}
	case errors.Is(err, membership.ErrInvalidPartitions):
		return &topicError{kerr.InvalidPartitions, err.Error()}
	case errors.Is(err, membership.ErrGrowAssignment):
		return &topicError{kerr.InvalidReplicaAssignment, err.Error()}
	case errors.Is(err, membership.ErrInvalidReplicationFactor):
		return &topicError{kerr.InvalidReplicationFactor, err.Error()}
	case errors.Is(err, membership.ErrInvalidConfig):
		return &topicError{kerr.InvalidConfig, err.Error()}
	case errors.Is(err, membership.ErrTopicChanged):
		return &topicError{kerr.NotController, err.Error() + "; retry"}
	case errors.Is(err, membership.ErrNotDurable):
		// Not saved, so not applied: the topic is as it was.
		return &topicError{kerr.KafkaStorageError, err.Error()}
	}
	return fmt.Errorf("alter topic %s: %w", name, err)
}

// applyTopicConfigs gives every open partition its topic's current configs,
// after a local alteration or one gossip brought (catalogLoop).
func (n *Node) applyTopicConfigs() {
	type looked struct {
		spec TopicSpec
		ok   bool
	}
	specs := make(map[string]looked) // one copy of each topic, not one per partition
	for _, p := range n.localPartitions() {
		l, seen := specs[p.Topic]
		if !seen {
			l.spec, l.ok = n.catalog.Topic(p.Topic)
			specs[p.Topic] = l
		}
		spec, ok := l.spec, l.ok
		if !ok || spec.ID != p.TopicID {
			continue // reconcile closes it
		}
		s, err := topicconfig.Parse(n.cfg.Topic, spec.Configs)
		if err != nil {
			n.log.WithError(err).WithField("topic", p.Topic).Warn("topic configs from the catalog refused; keeping the partition's")
			continue
		}
		if s == p.CurrentSettings() {
			continue
		}
		c := s.PartitionConfig(n.cfg.Topic, n.files, compression.Codecs{})
		if old := p.Replica.Config(); old.Flush != c.Flush && isInternalTopic(p.Topic) {
			c.Flush = old.Flush // the group coordinator's commits are fsynced whatever the default
		}
		p.Replica.SetConfig(c)
		p.LiveSettings.Store(&s)
	}
}
