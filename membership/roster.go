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

// RosterEntry is what the roster knows of one broker id.
//
// The roster is a join-semilattice per id, ordered by (Gen, Decommissioned)
// with false < true: the entry with the higher boot generation wins, and at
// the same generation a decommission tombstone wins over "seen alive". So:
//
//   - seeing a broker alive adds it (add-wins: no stale copy of the roster can
//     remove an id that was added, since merging only ever moves entries up);
//   - Decommission marks the id's current generation as removed, and merging
//     an older roster that still holds the same generation alive cannot
//     resurrect it, because the tombstone sorts above it;
//   - if the decommissioned broker boots again it advertises a higher "gen"
//     and is a new member: it joins the roster again. That is the only way
//     back in, and it takes a deliberate start of that broker.
//
// Merge is commutative, associative and idempotent, so rosters converge
// whatever order they are exchanged in.
//
// Drain (roster_drain.go) is a second, independent register of the entry:
// a counter merged by max, so a drain outlives the broker's reboots (a new
// generation) and a cancel (the next value) outranks the drain it ends.
type RosterEntry struct {
	ID             int32  `json:"id"`
	Gen            uint64 `json:"gen"`
	Decommissioned bool   `json:"decommissioned,omitempty"`
	Drain          uint64 `json:"drain,omitempty"`
}

// dominates reports whether e's (Gen, Decommissioned) sorts strictly above
// o's in the roster order.
func (e RosterEntry) dominates(o RosterEntry) bool {
	if e.Gen != o.Gen {
		return e.Gen > o.Gen
	}
	return e.Decommissioned && !o.Decommissioned
}

// join is the least entry above both e and o: the higher of their
// (Gen, Decommissioned) and the higher Drain.
func (e RosterEntry) join(o RosterEntry) RosterEntry {
	out := e
	if o.dominates(e) {
		out = o
	}
	out.Drain = max(e.Drain, o.Drain)
	return out
}

// maxRosterEntries bounds a roster decoded from a peer.
const maxRosterEntries = 1 << 16

// ErrUnknownBroker is returned when an operation names a broker id the roster
// has never seen.
var ErrUnknownBroker = errors.New("unknown broker id")

// Roster is the set of broker ids ever seen alive, minus decommissioned ones.
// It is safe for concurrent use.
type Roster struct {
	mu      sync.Mutex
	entries map[int32]RosterEntry
}

// NewRoster returns an empty roster.
func NewRoster() *Roster {
	return &Roster{entries: map[int32]RosterEntry{}}
}

// Add records broker id as seen alive at boot generation gen. It reports
// whether the roster changed.
func (r *Roster) Add(id int32, gen uint64) bool {
	return r.Merge([]RosterEntry{{ID: id, Gen: gen}})
}

// Decommission removes id as of its latest known generation. It reports
// whether the roster changed (false if id was already decommissioned).
func (r *Roster) Decommission(id int32) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[id]
	if !ok {
		return false, fmt.Errorf("decommission broker %d: %w", id, ErrUnknownBroker)
	}
	if e.Decommissioned {
		return false, nil
	}
	e.Decommissioned = true
	r.entries[id] = e
	return true, nil
}

// Merge folds entries into the roster and reports whether it changed.
// maxDrain bounds a roster entry's Drain: each drain, cancel and end
// counts up from 0 by a few, so no honest roster comes near it.
const maxDrain = 1 << 62

func (r *Roster) Merge(entries []RosterEntry) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for _, in := range entries {
		if in.Drain >= maxDrain {
			continue // from a peer never trusted: a drain no cancel could outrank
		}
		cur, ok := r.entries[in.ID]
		if !ok {
			r.entries[in.ID] = in
			changed = true
		} else if next := cur.join(in); next != cur {
			r.entries[in.ID] = next
			changed = true
		}
	}
	return changed
}

// clone copies the roster, so a change can be saved before it is made.
func (r *Roster) clone() *Roster {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := &Roster{entries: make(map[int32]RosterEntry, len(r.entries))}
	for k, v := range r.entries {
		out.entries[k] = v
	}
	return out
}

// adopt makes next's entries the roster's.
func (r *Roster) adopt(next *Roster) {
	next.mu.Lock()
	entries := next.entries
	next.mu.Unlock()
	r.mu.Lock()
	r.entries = entries
	r.mu.Unlock()
}

// wouldChange reports whether merging e would change the roster.
func (r *Roster) wouldChange(e RosterEntry) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur, ok := r.entries[e.ID]
	return !ok || cur.join(e) != cur
}

// entry returns id's entry.
func (r *Roster) entry(id int32) (RosterEntry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[id]
	return e, ok
}

// IDs returns the broker ids in the roster (decommissioned and draining
// ones excluded: nothing new is placed on a broker being drained),
// ascending. This is the list placement hashes over.
func (r *Roster) IDs() []int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]int32, 0, len(r.entries))
	for id, e := range r.entries {
		if !e.Decommissioned && !e.Draining() {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Entries returns every entry, tombstones included, by ascending id.
func (r *Roster) Entries() []RosterEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]RosterEntry, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Digest is a short fingerprint of the whole roster, tombstones included:
// the lowercase hex of xxhash64 over the binary encoding of Entries. Two
// rosters with the same digest hold the same entries; it is gossiped as the
// "rv" tag.
func (r *Roster) Digest() string {
	return fmt.Sprintf("%016x", xxhash.Sum64(encodeRoster(r.Entries())))
}

// encodeRoster is the compact form sent in Serf queries: a version byte, then
// per entry zigzag-varint id, uvarint gen and a flags byte (bit 0:
// decommissioned), and in version 2 a uvarint Drain. About 4 bytes per
// broker in practice. Version 1 while no entry has a Drain, so a roster
// without drains reads (and digests) as before drains existed.
func encodeRoster(entries []RosterEntry) []byte {
	version := byte(1)
	for _, e := range entries {
		if e.Drain != 0 {
			version = 2
		}
	}
	out := make([]byte, 0, 1+len(entries)*7)
	out = append(out, version)
	for _, e := range entries {
		out = binary.AppendVarint(out, int64(e.ID))
		out = binary.AppendUvarint(out, e.Gen)
		var flags byte
		if e.Decommissioned {
			flags |= 1
		}
		out = append(out, flags)
		if version == 2 {
			out = binary.AppendUvarint(out, e.Drain)
		}
	}
	return out
}

func decodeRoster(raw []byte) ([]RosterEntry, error) {
	if len(raw) == 0 || (raw[0] != 1 && raw[0] != 2) {
		return nil, errors.New("decode roster: unknown encoding version")
	}
	version := raw[0]
	raw = raw[1:]
	var out []RosterEntry
	for len(raw) > 0 {
		if len(out) >= maxRosterEntries {
			return nil, fmt.Errorf("decode roster: more than %d entries", maxRosterEntries)
		}
		id, n := binary.Varint(raw)
		if n <= 0 || id < -1<<31 || id > 1<<31-1 {
			return nil, errors.New("decode roster: bad broker id")
		}
		raw = raw[n:]
		gen, n := binary.Uvarint(raw)
		if n <= 0 {
			return nil, errors.New("decode roster: bad generation")
		}
		raw = raw[n:]
		if len(raw) == 0 || raw[0]&^1 != 0 {
			return nil, errors.New("decode roster: bad flags")
		}
		e := RosterEntry{ID: int32(id), Gen: gen, Decommissioned: raw[0]&1 != 0}
		raw = raw[1:]
		if version == 2 {
			if e.Drain, n = binary.Uvarint(raw); n <= 0 {
				return nil, errors.New("decode roster: bad drain")
			}
			raw = raw[n:]
		}
		out = append(out, e)
	}
	return out, nil
}

type rosterFileJSON struct {
	Entries []RosterEntry `json:"entries"`
}

// loadRoster reads a roster persisted by saveRoster; a missing file is an
// empty roster.
func loadRoster(path string) (*Roster, error) {
	r := NewRoster()
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read roster %s: %w", path, err)
	}
	var f rosterFileJSON
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("parse roster %s: %w", path, err)
	}
	r.Merge(f.Entries)
	return r, nil
}

func saveRoster(path string, r *Roster) error {
	raw, err := json.MarshalIndent(rosterFileJSON{Entries: r.Entries()}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode roster: %w", err)
	}
	if err := atomicfile.Write(path, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("persist roster: %w", err)
	}
	return nil
}
