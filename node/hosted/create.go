package hosted

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/topicconfig"
	"github.com/spool-log/spool/node/topics"
)

// Create is a topic to create (CreateTopics, auto-creation, the
// coordinators' internal topics).
type Create struct {
	Name string
	// Partitions and ReplicationFactor of -1 mean the defaults
	// (CreateConfig).
	Partitions        int32
	ReplicationFactor int16
	// Replicas are the replicas of each partition an operator listed
	// (checked against the roster already); nil: placed by the cluster.
	Replicas [][]int32
	Configs  map[string]string
	// ValidateOnly checks and places, storing nothing.
	ValidateOnly bool
	// Auto marks a create nobody asked for by name, which loses a
	// concurrent conflict to an explicit create.
	Auto bool
}

// CreateConfig is what a create needs of the node beside the catalog.
type CreateConfig struct {
	DefaultPartitions int32
	// DefaultReplicationFactor is the factor of a create that names none.
	DefaultReplicationFactor func() int16
	// EvenFactor says why an even factor is refused.
	EvenFactor func(rf int) string
	// Place picks a new topic's replicas (node/cluster's View.Place); it
	// wraps topics.ErrReplicationFactor when the roster is too small.
	Place func(topic string, partitions int32, rf int16) ([][]int32, error)
	// Live counts the brokers alive.
	Live func() int
	// Internal makes sure the internal topic name exists, as its owner
	// creates it (the group coordinator), for AutoCreate.
	Internal func(name string) error
}

// CreateTopic validates and records a topic, then opens its partitions
// this node hosts before it returns. The catalog derives the topic id, so
// two nodes auto-creating one name with the same defaults create one
// topic; a ValidateOnly create carries no id (Kafka's zero UUID).
// Refusals are topics.Refusal.
func (h *Host) CreateTopic(c Create) (topics.Spec, error) {
	cc := h.cfg.Create
	if err := membership.ValidateTopicName(c.Name); err != nil {
		return topics.Spec{}, refuse(topics.ErrInvalidName, err.Error())
	}
	partitions, rf := c.Partitions, c.ReplicationFactor
	if partitions == -1 {
		partitions = cc.DefaultPartitions
	}
	if partitions < 1 || partitions > topics.MaxPartitions {
		return topics.Spec{}, refuse(topics.ErrInvalidPartitions, "partitions must be between 1 and "+strconv.Itoa(topics.MaxPartitions))
	}
	if rf == -1 {
		rf = cc.DefaultReplicationFactor()
	}
	if rf < 1 {
		return topics.Spec{}, refuse(topics.ErrReplicationFactor, "replication factor must be at least 1")
	}
	if rf%2 == 0 {
		return topics.Spec{}, refuse(topics.ErrReplicationFactor, cc.EvenFactor(int(rf)))
	}
	settings, err := topicconfig.Parse(h.cfg.Topic, c.Configs)
	if err != nil {
		return topics.Spec{}, refuse(topics.ErrInvalidConfig, err.Error())
	}
	if settings.RemoteRecovery && !h.cfg.RemoteStore {
		return topics.Spec{}, refuse(topics.ErrInvalidConfig, "remote.storage.recovery=true restores from the object store, and this node has none (--remote-storage-endpoint)")
	}
	catalog := h.cfg.Catalog()
	if _, ok := catalog.Topic(c.Name); ok {
		return topics.Spec{}, refuse(topics.ErrTopicExists, "topic "+c.Name+" already exists")
	}
	replicas := c.Replicas
	if live := cc.Live(); replicas == nil && !c.Auto && int(rf) > live {
		// As Kafka: a replica placed on a broker that is down would start
		// the partition under-replicated, or without a quorum.
		return topics.Spec{}, refuse(topics.ErrReplicationFactor, fmt.Sprintf("replication factor %d is above the %d brokers alive", rf, live))
	}
	manual := replicas != nil
	if replicas == nil {
		var err error
		if replicas, err = cc.Place(c.Name, partitions, rf); err != nil {
			if errors.Is(err, topics.ErrReplicationFactor) {
				return topics.Spec{}, refuse(topics.ErrReplicationFactor, err.Error())
			}
			return topics.Spec{}, fmt.Errorf("place topic %s: %w", c.Name, err)
		}
	}
	spec := topics.Spec{Name: c.Name, Partitions: partitions, ReplicationFactor: rf, Replicas: replicas, AutoCreated: c.Auto, Manual: manual}
	if len(c.Configs) > 0 {
		spec.Configs = c.Configs
	}
	if c.ValidateOnly {
		return spec, nil
	}
	spec, err = catalog.Create(spec)
	if err != nil {
		if errors.Is(err, topics.ErrTopicExists) {
			return topics.Spec{}, refuse(topics.ErrTopicExists, "topic "+c.Name+" already exists")
		}
		return topics.Spec{}, fmt.Errorf("record topic %s: %w", c.Name, err)
	}
	if err := h.Reconcile(c.Name); err != nil {
		return spec, fmt.Errorf("open partitions of %s: %w", c.Name, err)
	}
	h.cfg.Log.WithFields(logrus.Fields{"topic": c.Name, "partitions": partitions, "replication_factor": rf}).Info("topic created")
	return spec, nil
}

// AutoCreate creates topic name with the defaults, for Metadata and
// Produce on an unknown name; losing a race to another creator is fine. An
// internal topic is created by its owner (CreateConfig.Internal), with its
// own partition count and configs; its failure is topics.ErrUnavailable.
func (h *Host) AutoCreate(name string) error {
	if topics.IsInternal(name) {
		if err := h.cfg.Create.Internal(name); err != nil {
			return refuse(topics.ErrUnavailable, err.Error())
		}
		return nil
	}
	_, err := h.CreateTopic(Create{Name: name, Partitions: -1, ReplicationFactor: -1, Auto: true})
	if errors.Is(err, topics.ErrTopicExists) {
		return nil
	}
	return err
}

func refuse(reason error, msg string) error { return &topics.Refusal{Reason: reason, Msg: msg} }

// DeleteTopic removes topic name from the catalog and closes (and
// quarantines) its partitions here. Refusals are topics.Refusal; a
// catalog that could not be saved is topics.ErrNotDurable, the topic still
// there.
func (h *Host) DeleteTopic(name string) error {
	if err := membership.ValidateTopicName(name); err != nil {
		return refuse(topics.ErrInvalidName, err.Error())
	}
	if topics.IsInternal(name) {
		return refuse(topics.ErrInvalidName, "topic "+name+" is internal and cannot be deleted")
	}
	if _, err := h.cfg.Catalog().Delete(name); err != nil {
		if errors.Is(err, topics.ErrUnknownTopic) {
			return refuse(topics.ErrUnknownTopic, "unknown topic "+name)
		}
		h.cfg.Log.WithError(err).WithField("topic", name).Error("delete topic")
		return err
	}
	if err := h.Reconcile(name); err != nil {
		h.cfg.Log.WithError(err).Warn("reconcile after delete")
	}
	h.cfg.Log.WithField("topic", name).Info("topic deleted")
	return nil
}
