package node

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// ErrTopicExists and ErrUnknownTopic are what Catalog.Create and Delete return
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

// Catalog is the set of topics. The single-node FileCatalog keeps it in one
// file; the cluster layer replaces it with one that gossip keeps in sync.
type Catalog interface {
	// Topics returns every topic, sorted by name.
	Topics() []TopicSpec
	// Topic looks a topic up by name.
	Topic(name string) (TopicSpec, bool)
	// TopicByID looks a topic up by id.
	TopicByID(id TopicID) (TopicSpec, bool)
	// Create records a new topic durably, or returns ErrTopicExists.
	Create(spec TopicSpec) error
	// Delete removes a topic durably and returns what it was, or returns
	// ErrUnknownTopic.
	Delete(name string) (TopicSpec, error)
	// Changes is signalled after every change, whoever made it, so the
	// node can open and close local partitions to match.
	Changes() <-chan struct{}
}

// FileCatalog is a Catalog persisted as JSON in one file, replaced atomically
// on every change.
type FileCatalog struct {
	path    string
	mu      sync.RWMutex
	topics  map[string]TopicSpec
	changes chan struct{}
}

type catalogFile struct {
	Version int         `json:"version"`
	Topics  []TopicSpec `json:"topics"`
}

// OpenFileCatalog loads the catalog at path, or starts an empty one if the
// file does not exist.
func OpenFileCatalog(path string) (*FileCatalog, error) {
	c := &FileCatalog{path: path, topics: make(map[string]TopicSpec), changes: make(chan struct{}, 1)}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read catalog %s: %w", path, err)
	}
	var f catalogFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("parse catalog %s: %w", path, err)
	}
	for _, t := range f.Topics {
		if err := ValidateTopicName(t.Name); err != nil {
			return nil, fmt.Errorf("catalog %s: %w", path, err)
		}
		if t.Partitions < 1 || int(t.Partitions) != len(t.Replicas) {
			return nil, fmt.Errorf("catalog %s: topic %s has %d partitions and %d replica lists", path, t.Name, t.Partitions, len(t.Replicas))
		}
		c.topics[t.Name] = t
	}
	return c, nil
}

func (c *FileCatalog) Topics() []TopicSpec {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]TopicSpec, 0, len(c.topics))
	for _, t := range c.topics {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (c *FileCatalog) Topic(name string) (TopicSpec, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.topics[name]
	return t, ok
}

func (c *FileCatalog) TopicByID(id TopicID) (TopicSpec, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, t := range c.topics {
		if t.ID == id {
			return t, true
		}
	}
	return TopicSpec{}, false
}

func (c *FileCatalog) Create(spec TopicSpec) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.topics[spec.Name]; ok {
		return ErrTopicExists
	}
	c.topics[spec.Name] = spec
	if err := c.saveLocked(); err != nil {
		delete(c.topics, spec.Name)
		return err
	}
	c.signal()
	return nil
}

func (c *FileCatalog) Delete(name string) (TopicSpec, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.topics[name]
	if !ok {
		return TopicSpec{}, ErrUnknownTopic
	}
	delete(c.topics, name)
	if err := c.saveLocked(); err != nil {
		c.topics[name] = t
		return TopicSpec{}, err
	}
	c.signal()
	return t, nil
}

func (c *FileCatalog) Changes() <-chan struct{} { return c.changes }

func (c *FileCatalog) signal() {
	select {
	case c.changes <- struct{}{}:
	default:
	}
}

func (c *FileCatalog) saveLocked() error {
	f := catalogFile{Version: 1}
	for _, t := range c.topics {
		f.Topics = append(f.Topics, t)
	}
	sort.Slice(f.Topics, func(i, j int) bool { return f.Topics[i].Name < f.Topics[j].Name })
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode catalog: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o755); err != nil {
		return fmt.Errorf("create catalog dir: %w", err)
	}
	return writeFileAtomic(c.path, b)
}
