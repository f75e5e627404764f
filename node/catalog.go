package node

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/spool-log/spool/membership"
)

// ErrTopicExists and ErrUnknownTopic are what the catalog's Create and Delete return
// for a name that is already taken or not there.
var (
	ErrTopicExists  = errors.New("topic already exists")
	ErrUnknownTopic = errors.New("unknown topic")
)

// TopicID is a topic's UUID (Metadata v10+): membership's, the one type
// the broker, its catalog and the client packages share. The membership
// catalog derives it from the topic's name, spec and the tombstone it
// replaces, so concurrent creates of one topic agree on it and a recreated
// topic is a different topic.
type TopicID = membership.TopicID

// TopicSpec is one topic as the catalog records it.
type TopicSpec struct {
	Name              string  `json:"name"`
	ID                TopicID `json:"id"`
	Partitions        int32   `json:"partitions"`
	ReplicationFactor int16   `json:"replication_factor"`
	// Replicas lists, per partition, the broker ids holding it in
	// succession order: the first live one leads.
	Replicas [][]int32         `json:"replicas"`
	Configs  map[string]string `json:"configs,omitempty"`
	// Moves are the partitions being reassigned, to their target replica
	// lists (reassign.go); Replicas stays the list each move started from
	// until it ends.
	Moves map[int32][]int32 `json:"moves,omitempty"`
	// Manual marks Replicas, at create, as an operator's assignment, which
	// automatic rebalancing never moves (the catalog pins them).
	Manual bool `json:"-"`
	// AutoCreated marks a topic nobody created by name (auto-creation on
	// Metadata or Produce, __consumer_offsets): of two concurrent
	// creates, an explicit one wins over an automatic one.
	AutoCreated bool `json:"-"`
	// Led are the partitions that have had a leader (membership's
	// topic_led.go): a replica of one that opens with no Raft state lost
	// it, and rejoins rather than starting the group (openPartition).
	Led []membership.LedRun `json:"-"`
}

// gossipCatalog is the topic catalog as the node uses it: the membership
// agent's, which Serf user events spread and anti-entropy repairs, seen
// through the node's own types.
type gossipCatalog struct {
	agent   *membership.Agent
	self    int32
	log     logrus.FieldLogger
	changes chan struct{}
	topics  <-chan membership.TopicChange
	unwatch func()
}

// newGossipCatalog subscribes to the agent's catalog changes before anything
// reads the catalog, so no change falls between a read and the watch; the
// agent queues them until watch runs.
func newGossipCatalog(agent *membership.Agent, self int32, log logrus.FieldLogger) *gossipCatalog {
	c := &gossipCatalog{agent: agent, self: self, log: log, changes: make(chan struct{}, 1)}
	c.topics, c.unwatch = agent.WatchTopics()
	return c
}

// watch turns the agent's catalog changes into signals on Changes, logging
// the changes that took back what this node told a client, until ctx ends.
func (c *gossipCatalog) watch(ctx context.Context) {
	defer c.unwatch()
	for {
		var ch membership.TopicChange
		select {
		case <-ctx.Done():
			return
		case change, ok := <-c.topics:
			if !ok {
				return
			}
			ch = change
		}
		if ch.Old != nil && !ch.Old.Deleted && ch.Old.ID != ch.New.ID && !ch.New.Deleted {
			logLostCreate(c.log, c.self, ch)
		}
		if ch.Old != nil && !ch.Old.Deleted && !ch.New.Deleted && ch.Old.ID == ch.New.ID && ch.New.Partitions < ch.Old.Partitions {
			logLostGrowth(c.log, ch)
		}
		if ch.Old != nil && membership.LedOnly(*ch.Old, ch.New) {
			continue // nothing to open or close (led.go)
		}
		c.signal()
	}
}

// logLostCreate reports two concurrent creates of one name with different
// specs (equal specs derive one id and never get here): reconcile deletes
// the loser's partitions, their id no longer matching, and opens the
// winner's. When the loser was created on this node, its CreateTopics
// response (or the auto-create a client saw) described a topic that no
// longer exists; that cannot be taken back, so it is logged as an error for
// the operator, with both specs.
func logLostCreate(log logrus.FieldLogger, self int32, ch membership.TopicChange) {
	fields := logrus.Fields{
		"topic": ch.New.Name, "lost": ch.Old.ID.String(), "won": ch.New.ID.String(),
		"lost_origin": ch.Old.Origin, "won_origin": ch.New.Origin,
		"lost_partitions": ch.Old.Partitions, "won_partitions": ch.New.Partitions,
		"lost_auto": ch.Old.Auto, "won_auto": ch.New.Auto,
	}
	if ch.Old.Origin == self {
		log.WithFields(fields).Error("a topic created on this node lost to a concurrent create elsewhere; its partitions and their records are deleted, and the client that created it was told a spec that no longer holds")
		return
	}
	log.WithFields(fields).Warn("concurrent creates of one topic: keeping the winner, deleting the other's partitions")
}

// logLostGrowth reports a topic whose partition count went down: a growth
// (CreatePartitions) lost to a whole-entry write made concurrently on the
// entry before it by a node of the previous version (the catalog's merge
// keeps the larger count of one incarnation otherwise: membership's
// topic_merge.go). The count of one
// incarnation only grows, so the partitions beyond the new count keep their
// data (dropReason); growing the topic again places them where they were,
// as long as the roster has not changed, and serves them again.
func logLostGrowth(log logrus.FieldLogger, ch membership.TopicChange) {
	log.WithFields(logrus.Fields{
		"topic": ch.New.Name, "topic_id": ch.New.ID.String(),
		"partitions_before": ch.Old.Partitions, "partitions_now": ch.New.Partitions, "won_origin": ch.New.Origin,
	}).Error("a growth of this topic lost to a concurrent alteration elsewhere; the partitions beyond the count are kept on disk but not served: grow the topic again (spool topic add-partitions) to serve them")
}

func specFromEntry(e membership.TopicEntry) TopicSpec {
	return TopicSpec{
		Name:              e.Name,
		ID:                e.ID,
		Partitions:        e.Partitions,
		ReplicationFactor: e.ReplicationFactor,
		Replicas:          e.Replicas,
		Configs:           e.Config,
		Moves:             movesOf(e),
		AutoCreated:       e.Auto,
		Led:               e.Led,
	}
}

// hadLeader tells whether partition index has had a leader.
func (s TopicSpec) hadLeader(index int32) bool {
	return membership.TopicEntry{Led: s.Led}.HasLed(index)
}

func movesOf(e membership.TopicEntry) map[int32][]int32 {
	if len(e.Moves) == 0 {
		return nil
	}
	out := make(map[int32][]int32, len(e.Moves))
	for _, m := range e.Moves {
		out[m.Partition] = m.Target
	}
	return out
}

// preferred is partition index's replica list in succession order: the
// move's target while one is under way (its first replica is the leader
// the move ends with), else the replica list.
func (s TopicSpec) preferred(index int32) []int32 {
	if t, ok := s.Moves[index]; ok {
		return t
	}
	return s.Replicas[index]
}

// hosting is partition index's replicas and those a move is adding:
// whose leadership claims count (a move may hand leadership to a new
// replica before it ends).
func (s TopicSpec) hosting(index int32) []int32 {
	out := s.Replicas[index]
	for _, b := range s.Moves[index] {
		if !containsID(out, b) {
			out = append(slices.Clone(out), b)
		}
	}
	return out
}

// hosts tells whether broker holds (or is to hold) partition index: a
// replica, or one a move is adding.
func (s TopicSpec) hosts(index int32, broker int32) bool {
	return containsID(s.Replicas[index], broker) || containsID(s.Moves[index], broker)
}

// Topics returns every topic, sorted by name.
func (c *gossipCatalog) Topics() []TopicSpec {
	entries := c.agent.Topics()
	out := make([]TopicSpec, len(entries))
	for i, e := range entries {
		out[i] = specFromEntry(e)
	}
	return out
}

// Topic looks a topic up by name.
func (c *gossipCatalog) Topic(name string) (TopicSpec, bool) {
	e, ok := c.agent.Topic(name)
	if !ok {
		return TopicSpec{}, false
	}
	return specFromEntry(e), true
}

// Partition returns a topic's id and the replicas of one of its partitions,
// copying nothing: the list is the catalog's and read-only. ok is false for
// an unknown topic or partition.
func (c *gossipCatalog) Partition(name string, index int32) (TopicID, []int32, bool) {
	id, replicas, ok := c.agent.TopicPartition(name, index)
	return id, replicas, ok
}

// Entry returns what the catalog holds for name: the topic (live or the id
// of the deleted one), whether it is a tombstone, and whether the catalog
// knows the name at all.
func (c *gossipCatalog) Entry(name string) (spec TopicSpec, deleted, known bool) {
	e, ok := c.agent.TopicEntry(name)
	if !ok {
		return TopicSpec{}, false, false
	}
	return specFromEntry(e), e.Deleted, true
}

// TopicByID looks a topic up by id.
func (c *gossipCatalog) TopicByID(id TopicID) (TopicSpec, bool) {
	name, ok := c.agent.TopicName(id)
	if !ok {
		return TopicSpec{}, false
	}
	spec, ok := c.Topic(name)
	if !ok || spec.ID != id { // deleted or re-created between the two looks
		return TopicSpec{}, false
	}
	return spec, true
}

// TopicName returns the name of the live topic with id, copying nothing.
func (c *gossipCatalog) TopicName(id TopicID) (string, bool) {
	return c.agent.TopicName(id)
}

// Create records a new topic and returns it as recorded (a failed save of
// the catalog is KAFKA_STORAGE_ERROR, and no topic): the catalog
// derives its id (a spec.ID is kept, for topics imported with one) and, when
// spec.Replicas is nil, places it. It returns ErrTopicExists when the name is
// taken, also when a concurrent create from elsewhere won meanwhile.
func (c *gossipCatalog) Create(spec TopicSpec) (TopicSpec, error) {
	e, err := c.agent.CreateTopic(membership.TopicSpec{
		Name:              spec.Name,
		Partitions:        spec.Partitions,
		ReplicationFactor: spec.ReplicationFactor,
		Config:            spec.Configs,
		ID:                spec.ID,
		Replicas:          spec.Replicas,
		Auto:              spec.AutoCreated,
		Pinned:            spec.Manual,
	})
	switch {
	case errors.Is(err, membership.ErrTopicExists):
		return TopicSpec{}, ErrTopicExists
	case errors.Is(err, membership.ErrInvalidReplicationFactor):
		return TopicSpec{}, fmt.Errorf("%w: %v", errReplicationFactor, err)
	case errors.Is(err, membership.ErrNotDurable):
		return TopicSpec{}, &topicError{kerr.KafkaStorageError, err.Error()}
	case err != nil:
		return TopicSpec{}, err
	}
	c.signal()
	return specFromEntry(e), nil
}

// Delete removes a topic and returns what it was, or returns ErrUnknownTopic.
func (c *gossipCatalog) Delete(name string) (TopicSpec, error) {
	e, err := c.agent.DeleteTopic(name)
	if errors.Is(err, membership.ErrUnknownTopic) {
		return TopicSpec{}, ErrUnknownTopic
	}
	if errors.Is(err, membership.ErrNotDurable) {
		// The topic is still there, data and all: the client may retry.
		return TopicSpec{}, &topicError{kerr.KafkaStorageError, err.Error()}
	}
	if err != nil {
		return TopicSpec{}, err
	}
	c.signal()
	return specFromEntry(e), nil
}

// Changes is signalled after every change, whoever made it, so the node can
// open and close local partitions to match.
func (c *gossipCatalog) Changes() <-chan struct{} { return c.changes }

func (c *gossipCatalog) signal() {
	select {
	case c.changes <- struct{}{}:
	default:
	}
}
