// Package topics is the broker's view of the topic catalog: the
// membership agent's gossiped catalog (which Serf user events spread and
// anti-entropy repairs) seen through the broker's topic type, Spec, with
// typed errors the Kafka handlers translate (ErrTopicExists,
// ErrUnknownTopic, ErrReplicationFactor, ErrNotDurable), never Kafka codes.
//
// It holds no lock of its own: the membership agent orders the catalog's
// writes (each durable before it is visible).
package topics

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
)

// The catalog's errors: a name already taken (also when a concurrent create
// from elsewhere won meanwhile), a name not there, a replication factor the
// roster cannot place, and a change that could not be made durable (the
// catalog is as it was: the client may retry).
var (
	ErrTopicExists       = errors.New("topic already exists")
	ErrUnknownTopic      = errors.New("unknown topic")
	ErrReplicationFactor = errors.New("invalid replication factor")
	ErrNotDurable        = errors.New("the catalog could not be saved")
)

// TopicID is a topic's UUID (Metadata v10+): membership's, the one type
// the broker, its catalog and the client packages share. The membership
// catalog derives it from the topic's name, spec and the tombstone it
// replaces, so concurrent creates of one topic agree on it and a recreated
// topic is a different topic.
type TopicID = membership.TopicID

// Spec is one topic as the catalog records it.
type Spec struct {
	Name              string  `json:"name"`
	ID                TopicID `json:"id"`
	Partitions        int32   `json:"partitions"`
	ReplicationFactor int16   `json:"replication_factor"`
	// Replicas lists, per partition, the broker ids holding it in
	// succession order: the first live one leads.
	Replicas [][]int32         `json:"replicas"`
	Configs  map[string]string `json:"configs,omitempty"`
	// Moves are the partitions being reassigned, to their target replica
	// lists (node/moves: step.go); Replicas stays the list each move started from
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

// Catalog is the topic catalog as the node uses it: the membership
// agent's, which Serf user events spread and anti-entropy repairs, seen
// through the node's own types.
type Catalog struct {
	agent   *membership.Agent
	self    int32
	log     logrus.FieldLogger
	changes chan struct{}
	topics  <-chan membership.TopicChange
	unwatch func()
}

// NewCatalog subscribes to the agent's catalog changes before anything
// reads the catalog, so no change falls between a read and the watch; the
// agent queues them until watch runs.
func NewCatalog(agent *membership.Agent, self int32, log logrus.FieldLogger) *Catalog {
	c := &Catalog{agent: agent, self: self, log: log, changes: make(chan struct{}, 1)}
	c.topics, c.unwatch = agent.WatchTopics()
	return c
}

// Watch turns the agent's catalog changes into signals on Changes, logging
// the changes that took back what this node told a client, until ctx ends.
func (c *Catalog) Watch(ctx context.Context) {
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
			continue // nothing to open or close (led.go: first leaders' marks)
		}
		c.Signal()
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

// FromEntry is a catalog entry as a Spec.
func FromEntry(e membership.TopicEntry) Spec {
	return Spec{
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

// HadLeader tells whether partition index has had a leader.
func (s Spec) HadLeader(index int32) bool {
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

// Preferred is partition index's replica list in succession order: the
// move's target while one is under way (its first replica is the leader
// the move ends with), else the replica list.
func (s Spec) Preferred(index int32) []int32 {
	if t, ok := s.Moves[index]; ok {
		return t
	}
	return s.Replicas[index]
}

// Hosting is partition index's replicas and those a move is adding:
// whose leadership claims count (a move may hand leadership to a new
// replica before it ends).
func (s Spec) Hosting(index int32) []int32 {
	out := s.Replicas[index]
	for _, b := range s.Moves[index] {
		if !slices.Contains(out, b) {
			out = append(slices.Clone(out), b)
		}
	}
	return out
}

// Hosts tells whether broker holds (or is to hold) partition index: a
// replica, or one a move is adding.
func (s Spec) Hosts(index int32, broker int32) bool {
	return slices.Contains(s.Replicas[index], broker) || slices.Contains(s.Moves[index], broker)
}

// Topics returns every topic, sorted by name.
func (c *Catalog) Topics() []Spec {
	entries := c.agent.Topics()
	out := make([]Spec, len(entries))
	for i, e := range entries {
		out[i] = FromEntry(e)
	}
	return out
}

// Topic looks a topic up by name.
func (c *Catalog) Topic(name string) (Spec, bool) {
	e, ok := c.agent.Topic(name)
	if !ok {
		return Spec{}, false
	}
	return FromEntry(e), true
}

// Partition returns a topic's id and the replicas of one of its partitions,
// copying nothing: the list is the catalog's and read-only. ok is false for
// an unknown topic or partition.
func (c *Catalog) Partition(name string, index int32) (TopicID, []int32, bool) {
	id, replicas, ok := c.agent.TopicPartition(name, index)
	return id, replicas, ok
}

// Entry returns what the catalog holds for name: the topic (live or the id
// of the deleted one), whether it is a tombstone, and whether the catalog
// knows the name at all.
func (c *Catalog) Entry(name string) (spec Spec, deleted, known bool) {
	e, ok := c.agent.TopicEntry(name)
	if !ok {
		return Spec{}, false, false
	}
	return FromEntry(e), e.Deleted, true
}

// TopicByID looks a topic up by id.
func (c *Catalog) TopicByID(id TopicID) (Spec, bool) {
	name, ok := c.agent.TopicName(id)
	if !ok {
		return Spec{}, false
	}
	spec, ok := c.Topic(name)
	if !ok || spec.ID != id { // deleted or re-created between the two looks
		return Spec{}, false
	}
	return spec, true
}

// TopicName returns the name of the live topic with id, copying nothing.
func (c *Catalog) TopicName(id TopicID) (string, bool) {
	return c.agent.TopicName(id)
}

// Current tells whether topic, the name an id was resolved to earlier,
// still has that id: a long poll outlives a delete and re-create under the
// same name, and the new incarnation's records must not be answered under
// the old id. An empty name (an id not known then) is never current.
func (c *Catalog) Current(name string, id TopicID) bool {
	if name == "" {
		return false
	}
	cur, ok := c.agent.TopicName(id)
	return ok && cur == name
}

// Create records a new topic and returns it as recorded (a failed save of
// the catalog is ErrNotDurable, and no topic): the catalog
// derives its id (a spec.ID is kept, for topics imported with one) and, when
// spec.Replicas is nil, places it. It returns ErrTopicExists when the name is
// taken, also when a concurrent create from elsewhere won meanwhile.
func (c *Catalog) Create(spec Spec) (Spec, error) {
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
		return Spec{}, ErrTopicExists
	case errors.Is(err, membership.ErrInvalidReplicationFactor):
		return Spec{}, fmt.Errorf("%w: %v", ErrReplicationFactor, err)
	case errors.Is(err, membership.ErrNotDurable):
		return Spec{}, fmt.Errorf("%w: %v", ErrNotDurable, err)
	case err != nil:
		return Spec{}, err
	}
	c.Signal()
	return FromEntry(e), nil
}

// Delete removes a topic and returns what it was, or returns ErrUnknownTopic.
func (c *Catalog) Delete(name string) (Spec, error) {
	e, err := c.agent.DeleteTopic(name)
	if errors.Is(err, membership.ErrUnknownTopic) {
		return Spec{}, ErrUnknownTopic
	}
	if errors.Is(err, membership.ErrNotDurable) {
		// The topic is still there, data and all: the client may retry.
		return Spec{}, fmt.Errorf("%w: %v", ErrNotDurable, err)
	}
	if err != nil {
		return Spec{}, err
	}
	c.Signal()
	return FromEntry(e), nil
}

// Changes is signalled after every change, whoever made it, so the node can
// open and close local partitions to match.
func (c *Catalog) Changes() <-chan struct{} { return c.changes }

// Signal wakes the watchers of Changes, as a change does.
func (c *Catalog) Signal() {
	select {
	case c.changes <- struct{}{}:
	default:
	}
}

// Alter changes a topic in the catalog (the membership agent's AlterTopic:
// the entry replaced under the same id with a newer Lamport time) and
// signals the watchers.
func (c *Catalog) Alter(name string, change func(*membership.TopicEntry) error) (Spec, error) {
	e, err := c.agent.AlterTopic(name, change)
	if err != nil {
		return Spec{}, err
	}
	c.Signal()
	return FromEntry(e), nil
}
