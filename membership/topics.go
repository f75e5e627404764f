package membership

import (
	"encoding/json"
	"fmt"

	"github.com/sirupsen/logrus"
)

// CreateTopic adds a topic to the catalog: it places every partition over
// the current roster (PlaceTopic: balanced rendezvous, in succession order),
// derives the topic id (deriveTopicID), stamps the entry one Lamport tick
// above the tombstone it replaces (1 for a name never seen) with this
// broker's id, persists it and broadcasts it. ReplicationFactor must be
// between 1 and the roster's size.
//
// Two nodes creating the same name at once both succeed locally, and the
// catalogs converge on one entry (see TopicEntry for the order):
//
//   - With the same spec, as two auto-creates with the cluster's defaults,
//     both entries carry the same id, so the merge changes nothing on disk:
//     every partition keeps the records written to it meanwhile. Their
//     replica lists are equal when the two rosters are (placement is a pure
//     function of name, partition count, roster and factor). Rosters differ
//     only while a broker's first join is still spreading; then the merge
//     keeps the winner's lists, a partition whose replicas are on the same
//     broker in both keeps its data, and a copy on a broker the winner did
//     not pick is deleted with its records. The id deliberately leaves the
//     replicas out so that this case loses as little as possible.
//   - With different specs (an explicit create racing an auto-create, or
//     two CreateTopics with different partition counts or configs) the ids
//     differ. An explicit create beats an automatic one, then the higher
//     origin broker id wins; the loser's partitions are deleted everywhere
//     and the winner's opened, empty. The loser's CreateTopics response has
//     already been sent and cannot be taken back: its node logs the loss
//     (watchers see a TopicChange whose Old, from this node, has another id).
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
	pred, seen := a.catalog.Get(spec.Name)
	if seen && !pred.Deleted {
		return TopicEntry{}, fmt.Errorf("create topic %s: %w", spec.Name, ErrTopicExists)
	}
	if !seen {
		pred = TopicEntry{}
	}
	id := spec.ID
	if id == (TopicID{}) {
		id = deriveTopicID(spec, pred)
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
		Auto:              spec.Auto,
		Lamport:           pred.Lamport + 1,
		Origin:            a.cfg.BrokerID,
	}
	if spec.Pinned && spec.Replicas != nil {
		for p := range spec.Partitions {
			entry.Pinned = append(entry.Pinned, p)
		}
	}
	entry = entry.clone()
	for p, rs := range entry.Replicas {
		if len(rs) != int(spec.ReplicationFactor) {
			return TopicEntry{}, fmt.Errorf("create topic %s: %w: partition %d has %d replicas",
				spec.Name, ErrInvalidReplicationFactor, p, len(rs))
		}
	}
	if len(spec.Config) > 0 {
		entry.Config = make(map[string]string, len(spec.Config))
		for k, v := range spec.Config {
			entry.Config[k] = v
		}
	}
	if err := entry.validate(); err != nil {
		return TopicEntry{}, fmt.Errorf("create topic: %w", err)
	}
	if _, err := a.mergeCatalog([]TopicEntry{entry}, "local"); err != nil {
		return TopicEntry{}, fmt.Errorf("create topic %s: %w", spec.Name, err)
	}
	// A create of the name that arrived from a peer since the check above
	// may have won; then this one is no create at all.
	cur, _ := a.catalog.Get(spec.Name)
	if cur.Deleted || cur.ID != entry.ID {
		return TopicEntry{}, fmt.Errorf("create topic %s: %w (created concurrently elsewhere)", spec.Name, ErrTopicExists)
	}
	if !cur.newerThan(entry) {
		a.broadcastTopic(entry)
	}
	return cur, nil
}

// DeleteTopic replaces a live topic by a tombstone with a new Lamport time,
// persists and broadcasts it, and returns the entry it deleted. If the
// tombstone cannot be saved the topic stays as it was and the error wraps
// ErrNotDurable (CreateTopic likewise). The tombstone
// keeps the topic's id, so nodes know which partitions to delete.
func (a *Agent) DeleteTopic(name string) (TopicEntry, error) {
	a.opMu.Lock()
	defer a.opMu.Unlock()
	cur, ok := a.catalog.Get(name)
	if !ok || cur.Deleted {
		return TopicEntry{}, fmt.Errorf("delete topic %s: %w", name, ErrUnknownTopic)
	}
	tomb := TopicEntry{Name: name, ID: cur.ID, Deleted: true, Lamport: a.catalog.tick(), Origin: a.cfg.BrokerID}
	if _, err := a.mergeCatalog([]TopicEntry{tomb}, "local"); err != nil {
		return TopicEntry{}, fmt.Errorf("delete topic %s: %w", name, err)
	}
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
	hint, err := json.Marshal(topicHint{Name: e.Name, Lamport: e.Lamport, Auto: e.Auto, Origin: e.Origin, Node: a.cfg.NodeName, Led: e.LedCount()})
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

// TopicEntry returns the catalog's entry for name, tombstone or not: a
// tombstone is the cluster's word that the topic was deleted, where a name
// missing from the catalog says nothing.
func (a *Agent) TopicEntry(name string) (TopicEntry, bool) {
	return a.catalog.Get(name)
}

// TopicPartition returns a live topic's id and the replicas of its
// partition index, or ok false for an unknown topic or partition. Unlike
// Topic it copies nothing: the replica list is the catalog's own and must
// not be modified. The produce and fetch paths look up one partition at a
// time.
func (a *Agent) TopicPartition(name string, index int32) (id TopicID, replicas []int32, ok bool) {
	return a.catalog.partition(name, index)
}

// TopicName returns the name of the live topic with id.
func (a *Agent) TopicName(id TopicID) (string, bool) { return a.catalog.nameByID(id) }

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
