package node

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
)

// ErrTopicExists and ErrUnknownTopic are what the catalog's Create and Delete return
// for a name that is already taken or not there.
var (
	ErrTopicExists  = errors.New("topic already exists")
	ErrUnknownTopic = errors.New("unknown topic")
)

// TopicID is a topic's UUID (Metadata v10+). It is chosen when the topic is
// created and never reused, so a recreated topic is a different topic.
type TopicID [16]byte

// NewTopicID returns a random version-4 UUID.
func NewTopicID() TopicID {
	var id TopicID
	_, _ = rand.Read(id[:])
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return id
}

func (id TopicID) String() string {
	h := hex.EncodeToString(id[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// MarshalText writes the UUID in its usual dashed form.
func (id TopicID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText reads the dashed (or plain hex) form.
func (id *TopicID) UnmarshalText(b []byte) error {
	s := make([]byte, 0, 32)
	for _, c := range b {
		if c != '-' {
			s = append(s, c)
		}
	}
	if len(s) != 32 {
		return fmt.Errorf("topic id %q: want 32 hex digits", b)
	}
	_, err := hex.Decode(id[:], s)
	return err
}

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
}

// gossipCatalog is the topic catalog as the node uses it: the membership
// agent's, which Serf user events spread and anti-entropy repairs, seen
// through the node's own types.
type gossipCatalog struct {
	agent   *membership.Agent
	changes chan struct{}
}

// newGossipCatalog subscribes to the agent's catalog changes before anything
// reads the catalog, so no change falls between a read and the watch.
func newGossipCatalog(agent *membership.Agent, log logrus.FieldLogger) *gossipCatalog {
	c := &gossipCatalog{agent: agent, changes: make(chan struct{}, 1)}
	watch, _ := agent.WatchTopics() // closed by the agent's Shutdown
	go func() {
		for ch := range watch {
			if ch.Old != nil && !ch.Old.Deleted && ch.Old.ID != ch.New.ID && !ch.New.Deleted {
				// Two nodes created the name at once and the other
				// create won: reconcile deletes the loser's partitions
				// (their id no longer matches) and opens the winner's.
				log.WithFields(logrus.Fields{"topic": ch.New.Name, "lost": ch.Old.ID.String(), "won": ch.New.ID.String()}).
					Warn("concurrent creates of one topic: keeping the winner, deleting the other's partitions")
			}
			c.signal()
		}
	}()
	return c
}

func specFromEntry(e membership.TopicEntry) TopicSpec {
	return TopicSpec{
		Name:              e.Name,
		ID:                TopicID(e.ID),
		Partitions:        e.Partitions,
		ReplicationFactor: e.ReplicationFactor,
		Replicas:          e.Replicas,
		Configs:           e.Config,
	}
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

// TopicByID looks a topic up by id.
func (c *gossipCatalog) TopicByID(id TopicID) (TopicSpec, bool) {
	for _, e := range c.agent.Topics() {
		if TopicID(e.ID) == id {
			return specFromEntry(e), true
		}
	}
	return TopicSpec{}, false
}

// Create records a new topic with the id and replicas the node chose, or
// returns ErrTopicExists.
func (c *gossipCatalog) Create(spec TopicSpec) error {
	_, err := c.agent.CreateTopic(membership.TopicSpec{
		Name:              spec.Name,
		Partitions:        spec.Partitions,
		ReplicationFactor: spec.ReplicationFactor,
		Config:            spec.Configs,
		ID:                membership.TopicID(spec.ID),
		Replicas:          spec.Replicas,
	})
	switch {
	case errors.Is(err, membership.ErrTopicExists):
		return ErrTopicExists
	case errors.Is(err, membership.ErrInvalidReplicationFactor):
		return fmt.Errorf("%w: %v", errReplicationFactor, err)
	case err != nil:
		return err
	}
	c.signal()
	return nil
}

// Delete removes a topic and returns what it was, or returns ErrUnknownTopic.
func (c *gossipCatalog) Delete(name string) (TopicSpec, error) {
	e, err := c.agent.DeleteTopic(name)
	if errors.Is(err, membership.ErrUnknownTopic) {
		return TopicSpec{}, ErrUnknownTopic
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

// importLegacyCatalog moves the topics of a single-node catalog file
// (DATA/topics.json, before nodes formed clusters) into the gossip catalog,
// once, keeping their ids and replicas; without it the next start would
// take their partitions for orphans. The file is renamed afterwards.
func (n *Node) importLegacyCatalog() error {
	path := filepath.Join(n.cfg.DataDir, legacyCatalogFileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read legacy catalog %s: %w", path, err)
	}
	var f struct {
		Topics []TopicSpec `json:"topics"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("parse legacy catalog %s: %w", path, err)
	}
	for _, t := range f.Topics {
		if _, ok := n.catalog.Topic(t.Name); ok {
			continue
		}
		if err := n.catalog.Create(t); err != nil && !errors.Is(err, ErrTopicExists) {
			return fmt.Errorf("import topic %s from %s: %w", t.Name, path, err)
		}
		n.log.WithField("topic", t.Name).Info("imported topic from the single-node catalog")
	}
	if err := os.Rename(path, path+".imported"); err != nil {
		return fmt.Errorf("retire legacy catalog %s: %w", path, err)
	}
	return nil
}
