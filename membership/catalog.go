package membership

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/spool-log/spool/internal/atomicfile"
)

// TopicChange tells a watcher that the entry for a name changed. Old is nil
// when the name was unknown. New.Deleted means the topic (Old's id) is gone;
// an Old and New with different ids means the topic was replaced (deleted and
// created again, or a concurrent create won over the one seen first), so the
// partitions of Old.ID must go and those of New.ID be opened.
type TopicChange struct {
	Old *TopicEntry
	New TopicEntry
}

// Catalog is the topic catalog of one node: a map from topic name to the
// join of the TopicEntries seen, tombstones included, plus the node's Lamport
// clock. Merging is a per-name join (topic_merge.go: the newest incarnation,
// its partitions merged one by one), so any two catalogs that have seen the
// same entries hold the same map, whatever the order of arrival. Safe for
// concurrent use.
type Catalog struct {
	mu     sync.Mutex
	clock  uint64
	topics map[string]TopicEntry
	users  entrySet[userKey, UserEntry]   // SCRAM users (user.go, catalog_users.go)
	acls   entrySet[ACLBinding, ACLEntry] // ACLs (acl.go, catalog_acls.go)
	// settings are the cluster settings (setting.go, catalog_settings.go).
	settings entrySet[string, SettingEntry]
	// quotas are the client quotas (quota.go, catalog_quotas.go).
	quotas entrySet[quotaKey, QuotaEntry]
}

// NewCatalog returns an empty catalog.
func NewCatalog() *Catalog {
	return &Catalog{topics: map[string]TopicEntry{}, users: newEntrySet[userKey, UserEntry](),
		acls: newEntrySet[ACLBinding, ACLEntry](), settings: newEntrySet[string, SettingEntry](),
		quotas: newEntrySet[quotaKey, QuotaEntry]()}
}

// tick advances the Lamport clock for a local operation and returns the time
// to stamp it with.
func (c *Catalog) tick() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clock++
	return c.clock
}

// Clock returns the current Lamport time.
func (c *Catalog) Clock() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clock
}

// Merge folds entries into the catalog. Invalid entries are skipped and
// reported in the error; the valid ones are applied regardless. It returns the
// changes, in name order.
func (c *Catalog) Merge(entries []TopicEntry) ([]TopicChange, error) {
	var errs []error
	var changes []TopicChange
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, in := range entries {
		if err := in.validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if in.Lamport > c.clock {
			c.clock = in.Lamport
		}
		cur, ok := c.topics[in.Name]
		if ok {
			if sameEntry(cur, in) {
				continue // the common case in anti-entropy, without copying
			}
			in = joinTopic(cur, in)
			if sameEntry(in, cur) {
				continue
			}
			if err := in.validate(); err != nil {
				// Two valid entries of one lineage joined into an invalid
				// one (replica lists longer than the winner's factor):
				// only a bug makes a lineage's factor differ.
				errs = append(errs, fmt.Errorf("merge topic %s: %w", in.Name, err))
				continue
			}
		} else {
			in = in.clone()
		}
		c.topics[in.Name] = in
		ch := TopicChange{New: in.clone()}
		if ok {
			old := cur.clone()
			ch.Old = &old
		}
		changes = append(changes, ch)
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].New.Name < changes[j].New.Name })
	return changes, errors.Join(errs...)
}

// clone copies the catalog, so a change can be made and persisted on the
// copy before the catalog everyone reads takes it (see Agent.mergeCatalog).
func (c *Catalog) clone() *Catalog {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &Catalog{clock: c.clock, topics: make(map[string]TopicEntry, len(c.topics)),
		users: c.users.copy(), acls: c.acls.copy(), settings: c.settings.copy(), quotas: c.quotas.copy()}
	for k, v := range c.topics {
		out.topics[k] = v // entries are replaced whole, never changed in place
	}
	return out
}

// adopt makes next's entries the catalog's; the clock keeps the higher of
// the two, as a local tick may have advanced it meanwhile.
func (c *Catalog) adopt(next *Catalog) {
	next.mu.Lock()
	topics, users, acls, settings, quotas, clock := next.topics, next.users, next.acls, next.settings, next.quotas, next.clock
	next.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.topics = topics
	users.gen = max(users.gen, c.users.gen)
	acls.gen = max(acls.gen, c.acls.gen)
	settings.gen = max(settings.gen, c.settings.gen)
	quotas.gen = max(quotas.gen, c.quotas.gen)
	c.users, c.acls, c.settings, c.quotas = users, acls, settings, quotas
	c.clock = max(c.clock, clock)
}

// Get returns the entry for name, tombstone or not.
func (c *Catalog) Get(name string) (TopicEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.topics[name]
	return e.clone(), ok
}

// partition returns a live topic's id and one partition's replicas, the
// catalog's own slice, which callers must not modify: entries are replaced
// whole, never changed in place, so it stays as it was. Produce and Fetch
// ask for it on every partition of every request.
func (c *Catalog) partition(name string, index int32) (TopicID, []int32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.topics[name]
	if !ok || e.Deleted || index < 0 || int(index) >= len(e.Replicas) {
		return TopicID{}, nil, false
	}
	return e.ID, e.Replicas[index], true
}

// nameByID is the name of the live topic with id, copying nothing (a
// Fetch v13+ resolves its topic ids with it on every request).
func (c *Catalog) nameByID(id TopicID) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, e := range c.topics {
		if e.ID == id && !e.Deleted {
			return name, true
		}
	}
	return "", false
}

// holdsWrite tells whether name's entry holds the write stamped v or one
// that supersedes it: its version is v or newer from another incarnation,
// or v stamps one of its partitions. An older alteration of the topic may
// still bring partitions the entry lacks (topic_merge.go), so a version
// above v is not enough. An alteration that changed no partition and lost
// is not found, costing one needless pull.
func (c *Catalog) holdsWrite(name string, v Stamp) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.topics[name]
	if !ok {
		return false
	}
	if c := e.version().compare(v); c == 0 || c > 0 && (e.Deleted || e.born().compare(v) > 0) {
		return true
	}
	if e.Wide == v {
		return true
	}
	for _, r := range e.Stamps {
		if r.Stamp == v {
			return true
		}
	}
	return false
}

// ledCount is how many partitions name's entry marks led.
func (c *Catalog) ledCount(name string) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.topics[name].LedCount()
}

// Entries returns every entry, tombstones included, by name.
func (c *Catalog) Entries() []TopicEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]TopicEntry, 0, len(c.topics))
	for _, e := range c.topics {
		out = append(out, e.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Digest fingerprints the catalog: xxhash64 over, per entry by name, the name,
// a 0x00, then big-endian Lamport (8), origin (4), the topic id (16) and a
// flags byte (bit 0 deleted, bit 1 auto, bit 2 stamped, bit 3 topic-wide
// stamped, bit 4 led) followed, for a stamped entry (Born, Stamps or Wide
// set), by its stamps (appendStampsDigest), then, for an entry with led
// partitions, by them (appendLedDigest):
// a merged entry is neither of its inputs, its version is the winner's, and
// its stamps are what tell it apart; then, per user entry by name and
// mechanism, a 0x01, the name, a 0x00, the mechanism, a 0x00, Lamport (8),
// origin (4) and a deleted byte; then, per ACL entry in ACLEntry.less
// order, a 0x02, the binding (aclDigestBytes), Lamport (8), origin (4) and
// a deleted byte; then, per setting by name, a 0x03, the name, a 0x00, the
// value, a 0x00, Lamport (8) and origin (4); then, per client quota in
// QuotaEntry.less order, a 0x04, the entry (QuotaEntry.appendDigest),
// Lamport (8), origin (4) and a deleted byte. A catalog without users, ACLs,
// settings or quotas (or stamps) hashes as before they existed, so nodes of both kinds agree on it. A
// version identifies the topic-wide content of an entry, each partition's
// stamp that partition's, and the count is hashed, so equal digests mean
// equal catalogs.
func (c *Catalog) Digest() uint64 {
	h := xxhash.New()
	var buf []byte
	for _, e := range c.Entries() {
		buf = buf[:0]
		buf = append(buf, e.Name...)
		buf = append(buf, 0)
		buf = binary.BigEndian.AppendUint64(buf, e.Lamport)
		buf = binary.BigEndian.AppendUint32(buf, uint32(e.Origin))
		buf = append(buf, e.ID[:]...)
		var flags byte
		if e.Deleted {
			flags |= 1
		}
		if e.Auto {
			flags |= 2
		}
		if e.Born != (Stamp{}) || len(e.Stamps) > 0 {
			flags |= 4
		}
		if e.Wide != (Stamp{}) {
			flags |= 8
		}
		if len(e.Led) > 0 {
			flags |= 16
		}
		buf = append(buf, flags)
		if flags&(4|8) != 0 {
			buf = e.appendStampsDigest(buf)
		}
		if flags&16 != 0 {
			buf = e.appendLedDigest(buf)
		}
		_, _ = h.Write(buf)
	}
	for _, u := range c.Users() {
		buf = buf[:0]
		buf = append(buf, 1)
		buf = append(buf, u.Name...)
		buf = append(buf, 0)
		buf = append(buf, u.Mechanism...)
		buf = append(buf, 0)
		buf = binary.BigEndian.AppendUint64(buf, u.Lamport)
		buf = binary.BigEndian.AppendUint32(buf, uint32(u.Origin))
		var deleted byte
		if u.Deleted {
			deleted = 1
		}
		buf = append(buf, deleted)
		_, _ = h.Write(buf)
	}
	for _, e := range c.ACLs() {
		buf = append(buf[:0], 2)
		buf = e.ACLBinding.appendDigest(buf)
		buf = binary.BigEndian.AppendUint64(buf, e.Lamport)
		buf = binary.BigEndian.AppendUint32(buf, uint32(e.Origin))
		var deleted byte
		if e.Deleted {
			deleted = 1
		}
		buf = append(buf, deleted)
		_, _ = h.Write(buf)
	}
	for _, e := range c.Settings() {
		buf = append(buf[:0], 3)
		buf = append(buf, e.Name...)
		buf = append(buf, 0)
		buf = append(buf, e.Value...)
		buf = append(buf, 0)
		buf = binary.BigEndian.AppendUint64(buf, e.Lamport)
		buf = binary.BigEndian.AppendUint32(buf, uint32(e.Origin))
		_, _ = h.Write(buf)
	}
	for _, e := range c.Quotas() {
		buf = append(buf[:0], 4)
		buf = e.appendDigest(buf)
		buf = binary.BigEndian.AppendUint64(buf, e.Lamport)
		buf = binary.BigEndian.AppendUint32(buf, uint32(e.Origin))
		var deleted byte
		if e.Deleted {
			deleted = 1
		}
		buf = append(buf, deleted)
		_, _ = h.Write(buf)
	}
	return h.Sum64()
}

// CatalogSnapshot is the whole catalog as persisted on disk and served to
// peers doing anti-entropy. Users and ACLs are absent from files written
// before they existed, which load as catalogs without them; nodes of that
// age ignore them.
type CatalogSnapshot struct {
	Clock  uint64       `json:"clock"`
	Topics []TopicEntry `json:"topics"`
	Users  []UserEntry  `json:"users,omitempty"`
	ACLs   []ACLEntry   `json:"acls,omitempty"`
	// Settings are absent from files written before they existed.
	Settings []SettingEntry `json:"settings,omitempty"`
	// Quotas are absent from files written before they existed.
	Quotas []QuotaEntry `json:"quotas,omitempty"`
}

// Snapshot copies the catalog.
func (c *Catalog) Snapshot() CatalogSnapshot {
	entries := c.Entries()
	return CatalogSnapshot{Clock: c.Clock(), Topics: entries, Users: c.Users(), ACLs: c.ACLs(), Settings: c.Settings(), Quotas: c.Quotas()}
}

// decodeCatalogSnapshot parses a snapshot from disk or a peer.
func decodeCatalogSnapshot(raw []byte) (CatalogSnapshot, error) {
	var s CatalogSnapshot
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, fmt.Errorf("decode catalog: %w", err)
	}
	return s, nil
}

// loadCatalog reads the catalog persisted by saveCatalog; a missing file is an
// empty catalog. A stored entry that fails validation is an error: the file is
// ours, so damage is reported rather than silently dropped.
func loadCatalog(path string) (*Catalog, error) {
	c := NewCatalog()
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read catalog %s: %w", path, err)
	}
	s, err := decodeCatalogSnapshot(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := c.Merge(s.Topics); err != nil {
		return nil, fmt.Errorf("load catalog %s: %w", path, err)
	}
	if _, err := c.MergeUsers(s.Users); err != nil {
		return nil, fmt.Errorf("load catalog %s: %w", path, err)
	}
	if _, err := c.MergeACLs(s.ACLs); err != nil {
		return nil, fmt.Errorf("load catalog %s: %w", path, err)
	}
	if _, err := c.MergeSettings(s.Settings); err != nil {
		return nil, fmt.Errorf("load catalog %s: %w", path, err)
	}
	if _, err := c.MergeQuotas(s.Quotas); err != nil {
		return nil, fmt.Errorf("load catalog %s: %w", path, err)
	}
	c.mu.Lock()
	c.clock = max(c.clock, s.Clock)
	c.mu.Unlock()
	return c, nil
}

func saveCatalog(path string, c *Catalog) error {
	raw, err := json.Marshal(c.Snapshot())
	if err != nil {
		return fmt.Errorf("encode catalog: %w", err)
	}
	if err := atomicfile.Write(path, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("persist catalog: %w", err)
	}
	return nil
}
