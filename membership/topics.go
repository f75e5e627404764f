package membership

import (
	"encoding/json"
	"fmt"

	"github.com/sirupsen/logrus"
)

// CreateTopic adds a topic to the catalog: it places every partition over
// the current roster (PlaceTopic: balanced rendezvous, in succession order), draws a topic id, stamps
// the entry with a new Lamport time and this broker's id, persists it and
// broadcasts it. ReplicationFactor must be between 1 and the roster's size.
//
// Two nodes creating the same name at once both succeed locally; the catalogs
// then converge on the entry with the higher (Lamport, origin) and the other
// is replaced everywhere (watchers see a TopicChange with a new id).
func (a *Agent) CreateTopic(spec TopicSpec) (TopicEntry, error) {
	if err := ValidateTopicName(spec.Name); err != nil {
		return TopicEntry{}, err
	}
	if spec.Partitions < 1 || spec.Partitions > MaxPartitions {
		return TopicEntry{}, fmt.Errorf("create topic %s: %w: %d not in 1..%d", spec.Name, ErrInvalidPartitions, spec.Partitions, MaxPartitions)
	}
	if err := validateConfig(spec.Config); err != nil {
		return TopicEntry{}, fmt.Errorf("create topic %s: %w", spec.Name, err)
	}
	roster := a.roster.IDs()
	if spec.ReplicationFactor < 1 || int(spec.ReplicationFactor) > len(roster) || spec.ReplicationFactor > MaxReplicationFactor {
		return TopicEntry{}, fmt.Errorf("create topic %s: %w: %d, the roster has %d brokers",
			spec.Name, ErrInvalidReplicationFactor, spec.ReplicationFactor, len(roster))
	}
	a.opMu.Lock()
	defer a.opMu.Unlock()
	if cur, ok := a.catalog.Get(spec.Name); ok && !cur.Deleted {
		return TopicEntry{}, fmt.Errorf("create topic %s: %w", spec.Name, ErrTopicExists)
	}
	id := spec.ID
	if id == (TopicID{}) {
		var err error
		if id, err = newTopicID(); err != nil {
			return TopicEntry{}, fmt.Errorf("create topic %s: %w", spec.Name, err)
		}
	}
	replicas := spec.Replicas
	if replicas == nil {
		replicas = PlaceTopic(spec.Name, spec.Partitions, roster, int(spec.ReplicationFactor))
	}
	entry := TopicEntry{
		Name:              spec.Name,
		ID:                id,
		Partitions:        spec.Partitions,
		ReplicationFactor: spec.ReplicationFactor,
		Replicas:          replicas,
		Origin:            a.cfg.BrokerID,
	}
	entry = entry.clone()
	for p, rs := range entry.Replicas {
		if len(rs) != int(spec.ReplicationFactor) {
			return TopicEntry{}, fmt.Errorf("create topic %s: %w: partition %d has %d replicas",
				spec.Name, ErrInvalidReplicationFactor, p, len(rs))
		}
	}
	if err := entry.validate(); err != nil {
		return TopicEntry{}, fmt.Errorf("create topic: %w", err)
	}
	entry.Lamport = a.catalog.tick()
	if len(spec.Config) > 0 {
		entry.Config = make(map[string]string, len(spec.Config))
		for k, v := range spec.Config {
			entry.Config[k] = v
		}
	}
	a.mergeCatalog([]TopicEntry{entry}, "local")
	a.broadcastTopic(entry)
	return entry.clone(), nil
}

// DeleteTopic replaces a live topic by a tombstone with a new Lamport time,
// persists and broadcasts it, and returns the entry it deleted. The tombstone
// keeps the topic's id, so nodes know which partitions to delete.
func (a *Agent) DeleteTopic(name string) (TopicEntry, error) {
	a.opMu.Lock()
	defer a.opMu.Unlock()
	cur, ok := a.catalog.Get(name)
	if !ok || cur.Deleted {
		return TopicEntry{}, fmt.Errorf("delete topic %s: %w", name, ErrUnknownTopic)
	}
	tomb := TopicEntry{Name: name, ID: cur.ID, Deleted: true, Lamport: a.catalog.tick(), Origin: a.cfg.BrokerID}
	a.mergeCatalog([]TopicEntry{tomb}, "local")
	a.broadcastTopic(tomb)
	return cur, nil
}

// broadcastTopic spreads one catalog entry: whole in a Serf user event when
// it fits Config.UserEventMaxBytes, else as a hint that makes peers pull the
// catalog from this node. Either way anti-entropy repairs a lost message.
func (a *Agent) broadcastTopic(e TopicEntry) {
	log := a.log.WithFields(logrus.Fields{"topic": e.Name, "lamport": e.Lamport})
	payload, err := json.Marshal(e)
	if err == nil && len(eventTopic)+len(payload) <= a.cfg.UserEventMaxBytes {
		if err := a.serf.UserEvent(eventTopic, payload, false); err != nil {
			log.WithError(err).Warn("broadcast topic; anti-entropy will spread it")
		}
		return
	}
	hint, err := json.Marshal(topicHint{Name: e.Name, Lamport: e.Lamport, Origin: e.Origin, Node: a.cfg.NodeName})
	if err != nil {
		log.WithError(err).Warn("encode topic hint")
		return
	}
	if err := a.serf.UserEvent(eventTopicHint, hint, false); err != nil {
		log.WithError(err).Warn("broadcast topic hint; anti-entropy will spread it")
	}
}

// Topic returns a live (not deleted) topic.
func (a *Agent) Topic(name string) (TopicEntry, bool) {
	e, ok := a.catalog.Get(name)
	if !ok || e.Deleted {
		return TopicEntry{}, false
	}
	return e, true
}

// Topics returns the live topics by name.
func (a *Agent) Topics() []TopicEntry {
	all := a.catalog.Entries()
	out := all[:0]
	for _, e := range all {
		if !e.Deleted {
			out = append(out, e)
		}
	}
	return out
}

// CatalogSnapshot returns the whole catalog, tombstones included.
func (a *Agent) CatalogSnapshot() CatalogSnapshot { return a.catalog.Snapshot() }

// Digest fingerprints the catalog (see Catalog.Digest); equal on two nodes
// means they hold the same catalog.
func (a *Agent) Digest() uint64 { return a.catalog.Digest() }
