package membership

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
)

// Bounds on what a topic entry may hold. Entries arrive from peers, so they are
// checked before they are stored or allocated against.
const (
	MaxTopicNameLen      = 249
	MaxPartitions        = 100_000
	MaxReplicationFactor = 64
	maxConfigEntries     = 256
	maxConfigKeyLen      = 255
	maxConfigValueLen    = 4096
)

var (
	ErrInvalidTopic             = errors.New("invalid topic name")
	ErrInvalidPartitions        = errors.New("invalid partition count")
	ErrInvalidReplicationFactor = errors.New("invalid replication factor")
	ErrInvalidConfig            = errors.New("invalid topic config")
	ErrTopicExists              = errors.New("topic already exists")
	ErrUnknownTopic             = errors.New("unknown topic")
	// ErrNotDurable means a change to persisted state (catalog, roster)
	// could not be saved, so it was not made: the node's state is as it
	// was before the call.
	ErrNotDurable = errors.New("state change not saved to disk")
)

// TopicID is the 16-byte id Kafka clients know a topic by (Metadata v10+,
// Fetch v13+). It is derived, not drawn (see deriveTopicID): nodes that
// create one name from the same history with the same spec make the same id,
// and a topic deleted and created again gets a new one.
type TopicID [16]byte

// topicIDDomain separates Spool's topic-id hash from any other use of SHA-256.
const topicIDDomain = "spool topic id v1\x00"

// deriveTopicID is the id of a create of spec that replaces pred, the
// tombstone the catalog holds for the name (the zero entry when the name was
// never seen): the first 16 bytes of SHA-256 over a domain string, the name,
// pred's version and id, the partition count, the replication factor and the
// configs sorted by key, each field length-prefixed or fixed-width, shaped as
// an RFC 9562 version-8 UUID.
//
// Why derived: a node that has not yet heard of a topic created elsewhere a
// moment ago may auto-create it itself (Metadata, Produce, the group
// coordinator). With random ids the two creates were different topics and
// the merge deleted the loser's partitions, records included. With derived
// ids both creates are one topic: the merge keeps one entry and every
// partition keeps its data (replica lists are left out of the hash on
// purpose, see CreateTopic). A delete followed by a create hashes the
// tombstone's version, so the new topic never reuses the old id.
//
// The spec is in the hash because a partition's directory holds data laid
// out under its topic's configs: two creates with different specs are
// different topics, and the merge replaces the loser's partitions by the
// winner's, empty.
func deriveTopicID(spec TopicSpec, pred TopicEntry) TopicID {
	h := sha256.New()
	var buf []byte
	field := func(s string) {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
		buf = append(buf, s...)
	}
	buf = append(buf, topicIDDomain...)
	field(spec.Name)
	buf = binary.BigEndian.AppendUint64(buf, pred.Lamport)
	buf = binary.BigEndian.AppendUint32(buf, uint32(pred.Origin))
	buf = append(buf, pred.ID[:]...)
	buf = binary.BigEndian.AppendUint32(buf, uint32(spec.Partitions))
	buf = binary.BigEndian.AppendUint16(buf, uint16(spec.ReplicationFactor))
	keys := make([]string, 0, len(spec.Config))
	for k := range spec.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(keys)))
	for _, k := range keys {
		field(k)
		field(spec.Config[k])
	}
	_, _ = h.Write(buf)
	var id TopicID
	copy(id[:], h.Sum(nil))
	id[6] = id[6]&0x0f | 0x80 // version 8: custom
	id[8] = id[8]&0x3f | 0x80 // RFC 9562 variant; never all zero
	return id
}

// String is the hex of the 16 bytes in UUID grouping.
func (id TopicID) String() string {
	h := hex.EncodeToString(id[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// MarshalText encodes the id as 32 hex digits.
func (id TopicID) MarshalText() ([]byte, error) {
	return []byte(hex.EncodeToString(id[:])), nil
}

// UnmarshalText accepts 32 hex digits, dashed (UUID form) or not.
func (id *TopicID) UnmarshalText(b []byte) error {
	b = bytes.ReplaceAll(b, []byte("-"), nil)
	if len(b) != 32 {
		return fmt.Errorf("topic id: want 32 hex digits, got %d bytes", len(b))
	}
	_, err := hex.Decode(id[:], b)
	if err != nil {
		return fmt.Errorf("topic id: %w", err)
	}
	return nil
}

// TopicSpec is what a client asks for when it creates a topic. ID and
// Replicas are normally left empty: CreateTopic derives the id and places the
// replicas over the roster. A caller that already has them (a topic imported
// from a single-node catalog keeps its id; the node's CreateTopics path
// places through its Cluster, the same PlaceTopic) may pass them; they are
// validated as any entry from a peer.
//
// Auto marks a create nobody asked for by name (auto-creation on Metadata or
// Produce, __consumer_offsets by the group coordinator): of two concurrent
// creates of one name, an explicit one wins over an automatic one.
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Config            map[string]string
	ID                TopicID
	Replicas          [][]int32
	Auto              bool
	// Pinned marks Replicas as an operator's manual assignment, which
	// automatic rebalancing never moves.
	Pinned bool
}

// TopicEntry is one topic as the catalog holds it. Replicas[p] lists the
// brokers of partition p in succession order (the first live one leads).
//
// (Lamport, Auto, Origin) is the entry's version. Of two entries for one
// name from different incarnations (creates, deletes; the merge of one
// incarnation's alterations is per partition, topic_merge.go) the one
// born with the higher Lamport time wins; at equal times an explicit
// create beats an automatic one, then the higher origin broker id wins, then
// the higher topic id bytes (only reachable by a bug, kept so the order is
// total). A delete is a tombstone (Deleted, no replicas) stamped with a new
// tick of its node's clock, so it beats the create it deletes. A create is
// stamped one above the entry it replaces (1 for a name never seen): every
// create made from the same history carries the same time, so concurrent
// creates are settled by the tie-breaks above whatever the nodes' clocks, and
// a delete of any of them beats them all, even a create made by a node that
// had not seen the delete's sibling create.
type TopicEntry struct {
	Name              string            `json:"name"`
	ID                TopicID           `json:"id"`
	Partitions        int32             `json:"partitions,omitempty"`
	ReplicationFactor int16             `json:"replicationFactor,omitempty"`
	Replicas          [][]int32         `json:"replicas,omitempty"`
	Config            map[string]string `json:"config,omitempty"`
	Deleted           bool              `json:"deleted,omitempty"`
	Auto              bool              `json:"auto,omitempty"`
	Lamport           uint64            `json:"lamport"`
	Origin            int32             `json:"origin"`
	// Moves are the partitions being reassigned (topic_move.go), by
	// partition, ascending: absent from entries of topics not moving and
	// from catalogs written before reassignment existed.
	Moves []PartitionMove `json:"moves,omitempty"`
	// Pinned are the partitions, ascending, whose replicas an operator
	// chose (a manual assignment at create, a reassignment): automatic
	// rebalancing leaves them where they are (topic_move.go).
	Pinned []int32 `json:"pinned,omitempty"`
	// Born is the version of the write that started this incarnation of
	// the topic when that is not the entry's own version, and Stamps the
	// versions of the writes that last changed each partition's
	// placement, as runs, when they are not all the entry's version
	// (topic_merge.go). Both absent from entries written before they
	// existed, which merge as whole-entry writes.
	Born   Stamp      `json:"born,omitzero"`
	Stamps []StampRun `json:"stamps,omitempty"`
	// Wide is the version of the write that last changed the topic-wide
	// alterable fields (Config) when that is not the entry's own version,
	// so a config change survives a concurrent move that outdates it as a
	// version (topic_merge.go). Absent from entries written before it
	// existed, whose configs follow their version.
	Wide Stamp `json:"wide,omitzero"`
	// Led are the partitions that have had a leader (topic_led.go).
	Led []LedRun `json:"led,omitempty"`
}

// newerThan reports whether e's version sorts above o's.
func (e TopicEntry) newerThan(o TopicEntry) bool {
	if e.Lamport != o.Lamport {
		return e.Lamport > o.Lamport
	}
	if e.Auto != o.Auto {
		return !e.Auto
	}
	if e.Origin != o.Origin {
		return e.Origin > o.Origin
	}
	if c := bytes.Compare(e.ID[:], o.ID[:]); c != 0 {
		return c > 0
	}
	return e.Deleted && !o.Deleted
}

func (e TopicEntry) clone() TopicEntry {
	out := e
	if e.Replicas != nil {
		out.Replicas = make([][]int32, len(e.Replicas))
		for i, rs := range e.Replicas {
			out.Replicas[i] = append([]int32(nil), rs...)
		}
	}
	if e.Pinned != nil {
		out.Pinned = append([]int32(nil), e.Pinned...)
	}
	if e.Stamps != nil {
		out.Stamps = append([]StampRun(nil), e.Stamps...)
	}
	if e.Led != nil {
		out.Led = append([]LedRun(nil), e.Led...)
	}
	if e.Moves != nil {
		out.Moves = make([]PartitionMove, len(e.Moves))
		for i, m := range e.Moves {
			out.Moves[i] = PartitionMove{Partition: m.Partition, Target: append([]int32(nil), m.Target...), Started: m.Started}
		}
	}
	if e.Config != nil {
		out.Config = make(map[string]string, len(e.Config))
		for k, v := range e.Config {
			out.Config[k] = v
		}
	}
	return out
}

// ValidateTopicName applies Kafka's rules: 1 to 249 characters of
// [a-zA-Z0-9._-], and neither "." nor "..". A valid name is safe as a path
// component.
func ValidateTopicName(name string) error {
	if len(name) == 0 || len(name) > MaxTopicNameLen {
		return fmt.Errorf("%w: %q: length %d not in 1..%d", ErrInvalidTopic, name, len(name), MaxTopicNameLen)
	}
	if name == "." || name == ".." {
		return fmt.Errorf("%w: %q", ErrInvalidTopic, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("%w: %q: character %q not in [a-zA-Z0-9._-]", ErrInvalidTopic, name, c)
		}
	}
	return nil
}

func validateConfig(cfg map[string]string) error {
	if len(cfg) > maxConfigEntries {
		return fmt.Errorf("%w: %d entries, at most %d", ErrInvalidConfig, len(cfg), maxConfigEntries)
	}
	for k, v := range cfg {
		if len(k) == 0 || len(k) > maxConfigKeyLen || len(v) > maxConfigValueLen {
			return fmt.Errorf("%w: key %.40q or its value too long", ErrInvalidConfig, k)
		}
	}
	return nil
}

// validate checks an entry received from anywhere before it is stored.
func (e TopicEntry) validate() error {
	if err := ValidateTopicName(e.Name); err != nil {
		return err
	}
	if e.Deleted {
		if len(e.Replicas) != 0 || len(e.Moves) != 0 || len(e.Pinned) != 0 {
			return fmt.Errorf("topic %s: tombstone carries replicas", e.Name)
		}
		if err := e.validateLed(); err != nil {
			return err
		}
		return e.validateStamps()
	}
	if e.Partitions < 1 || e.Partitions > MaxPartitions {
		return fmt.Errorf("topic %s: %w: %d not in 1..%d", e.Name, ErrInvalidPartitions, e.Partitions, MaxPartitions)
	}
	if e.ReplicationFactor < 1 || e.ReplicationFactor > MaxReplicationFactor {
		return fmt.Errorf("topic %s: %w: %d not in 1..%d", e.Name, ErrInvalidReplicationFactor, e.ReplicationFactor, MaxReplicationFactor)
	}
	if int32(len(e.Replicas)) != e.Partitions {
		return fmt.Errorf("topic %s: %d replica lists for %d partitions", e.Name, len(e.Replicas), e.Partitions)
	}
	for p, rs := range e.Replicas {
		if len(rs) == 0 || len(rs) > int(e.ReplicationFactor) {
			return fmt.Errorf("topic %s partition %d: %d replicas, want 1..%d", e.Name, p, len(rs), e.ReplicationFactor)
		}
		seen := make(map[int32]bool, len(rs))
		for _, b := range rs {
			if b < 0 {
				return fmt.Errorf("topic %s partition %d: negative broker id %d", e.Name, p, b)
			}
			if seen[b] {
				return fmt.Errorf("topic %s partition %d: broker %d listed twice", e.Name, p, b)
			}
			seen[b] = true
		}
	}
	if e.ID == (TopicID{}) {
		return fmt.Errorf("topic %s: zero topic id", e.Name)
	}
	if err := e.validateMoves(); err != nil {
		return err
	}
	if err := e.validateStamps(); err != nil {
		return err
	}
	if err := e.validateLed(); err != nil {
		return err
	}
	return validateConfig(e.Config)
}
