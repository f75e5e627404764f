package membership

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
)

// Per-partition merge. Partition reassignment alters single partitions of a
// topic from different nodes (the node that starts moves, each partition's
// leader ending its own), so two alterations of one topic made within gossip
// delay of each other are common. Kept as one last-writer-wins register, the
// entry kept only the later and lost the other's partitions. Instead:
//
//   - Each partition's placement (Replicas[p], its Moves entry, whether it
//     is Pinned) carries the stamp of the write that last changed it
//     (Stamps; AlterTopic stamps the partitions it changed with its own
//     version). A partition no run names, in an entry without Stamps, is
//     stamped with the entry's version: an entry of a node or file from
//     before stamps existed is one write of every partition.
//   - The topic-wide fields an alteration may change (Config) carry the
//     stamp of the write that last changed them (Wide; AlterTopic sets it
//     to its version when it changes them, keeps it otherwise). An entry
//     without Wide has them stamped with its version, as before Wide
//     existed.
//   - Entries of one topic incarnation (a lineage) merge partition by
//     partition: each partition from the entry whose stamp for it is
//     higher; the configs from the entry whose Wide stamp is higher (so a
//     config change survives a concurrent move recorded later in Lamport
//     time elsewhere); the fixed fields (ReplicationFactor, Auto) and the
//     version from the entry whose version is higher; the partition count
//     is the larger (an incarnation's count only grows, so the larger
//     includes every growth; partitions beyond the smaller count come from
//     the entry that has them).
//   - Different lineages do not merge: the one with the higher key wins
//     whole. A lineage's key is its birth, (born version, id, deleted):
//     born is the version of the write that started it: a create, or a
//     whole-entry write that did not carry Born (a node of the previous
//     version, which drops the field, writes whole entries; so do entries
//     relayed through such a node). A tombstone is a lineage of its own,
//     born at its own version. So a delete beats every entry of the topic
//     it deletes that was born before it (every alteration of it, whatever
//     its Lamport time: an alteration racing a delete no longer brings the
//     topic back), a create beats the tombstone it replaces (stamped one
//     above it), and concurrent creates are settled by their create
//     versions as before. Keying lineages by their birth rather than by
//     their latest write is what makes this a join: with the latest write
//     as key, an entry of lineage X could lose to lineage Y and later win
//     over it by a newer alteration, and what the first X entry brought
//     would be lost or kept depending on the order of arrival.
//
// The key order is total, and within one lineage the merge is a maximum
// per partition and per topic-wide register over total orders (ties of
// stamp, reachable only by a bug, are broken by the content), so the merge
// is commutative, associative and idempotent: every node that has seen the
// same entries holds the same entry, in whatever order they came.

// Stamp is the version of one write: ordered as entry versions are (Lamport
// time, then explicit before automatic, then origin broker id).
type Stamp struct {
	Lamport uint64 `json:"lamport"`
	Auto    bool   `json:"auto,omitempty"`
	Origin  int32  `json:"origin"`
}

func (s Stamp) compare(o Stamp) int {
	if c := cmp.Compare(s.Lamport, o.Lamport); c != 0 {
		return c
	}
	if s.Auto != o.Auto {
		if s.Auto {
			return -1
		}
		return 1
	}
	return cmp.Compare(s.Origin, o.Origin)
}

// StampRun stamps partitions From up to the next run's From (or the count).
type StampRun struct {
	From int32 `json:"from"`
	Stamp
}

// version is the entry's own version as a stamp.
func (e TopicEntry) version() Stamp { return Stamp{Lamport: e.Lamport, Auto: e.Auto, Origin: e.Origin} }

// born is the version of the write that started e's lineage (see above).
func (e TopicEntry) born() Stamp {
	if e.Born == (Stamp{}) || e.Deleted {
		return e.version()
	}
	return e.Born
}

// wide is the stamp of the write that last changed e's topic-wide fields.
func (e TopicEntry) wide() Stamp {
	if e.Wide == (Stamp{}) {
		return e.version()
	}
	return e.Wide
}

// stamps are e's partitions' stamps, one per partition.
func (e TopicEntry) stamps() []Stamp {
	out := make([]Stamp, e.Partitions)
	if len(e.Stamps) == 0 {
		v := e.version()
		for p := range out {
			out[p] = v
		}
		return out
	}
	for i, r := range e.Stamps {
		end := e.Partitions
		if i+1 < len(e.Stamps) {
			end = e.Stamps[i+1].From
		}
		for p := r.From; p < end; p++ {
			out[p] = r.Stamp
		}
	}
	return out
}

// setStamps stores born, the topic-wide stamp and the per-partition stamps
// in canonical form: Born and Wide zero when they are the entry's version,
// runs merged, Stamps nil when every partition is stamped with the entry's
// version. Canonical so that equal stamps are equal fields (Catalog.Digest
// hashes them).
func (e *TopicEntry) setStamps(born, wide Stamp, st []Stamp) {
	v := e.version()
	e.Born, e.Wide = born, wide
	if born == v {
		e.Born = Stamp{}
	}
	if wide == v {
		e.Wide = Stamp{}
	}
	e.Stamps = nil
	all := true
	for p, s := range st {
		all = all && s == v
		if p == 0 || s != st[p-1] {
			e.Stamps = append(e.Stamps, StampRun{From: int32(p), Stamp: s})
		}
	}
	if all {
		e.Stamps = nil
	}
}

// validateStamps checks Born and Stamps are canonical and no later than the
// entry (every write of a lineage is at or after its birth and at or before
// the entry's version).
func (e TopicEntry) validateStamps() error {
	if e.Deleted {
		if e.Born != (Stamp{}) || e.Wide != (Stamp{}) || len(e.Stamps) != 0 {
			return fmt.Errorf("topic %s: tombstone carries stamps", e.Name)
		}
		return nil
	}
	v := e.version()
	if e.Born != (Stamp{}) && e.Born.compare(v) >= 0 {
		return fmt.Errorf("topic %s: born %v not before the entry's version %v", e.Name, e.Born, v)
	}
	born := e.born()
	if e.Wide != (Stamp{}) && (e.Wide.compare(v) >= 0 || e.Wide.compare(born) < 0) {
		return fmt.Errorf("topic %s: topic-wide stamp %v outside born %v .. before version %v", e.Name, e.Wide, born, v)
	}
	if len(e.Stamps) == 0 {
		return nil
	}
	if e.Stamps[0].From != 0 || len(e.Stamps) > int(e.Partitions) {
		return fmt.Errorf("topic %s: stamps do not start at partition 0 or outnumber partitions", e.Name)
	}
	for i, r := range e.Stamps {
		if r.From >= e.Partitions || (i > 0 && (r.From <= e.Stamps[i-1].From || r.Stamp == e.Stamps[i-1].Stamp)) {
			return fmt.Errorf("topic %s: stamp runs not ascending distinct runs of %d partitions", e.Name, e.Partitions)
		}
		if r.compare(v) > 0 || r.compare(born) < 0 {
			return fmt.Errorf("topic %s: partition stamp %v outside born %v .. version %v", e.Name, r.Stamp, born, v)
		}
	}
	if len(e.Stamps) == 1 && e.Stamps[0].Stamp == v {
		return fmt.Errorf("topic %s: stamps not canonical", e.Name)
	}
	return nil
}

// compareLineage orders the lineages of a and b (see above); 0 means one
// lineage.
func compareLineage(a, b TopicEntry) int {
	if c := a.born().compare(b.born()); c != 0 {
		return c
	}
	if c := bytes.Compare(a.ID[:], b.ID[:]); c != 0 {
		return c
	}
	switch {
	case a.Deleted == b.Deleted:
		return 0
	case a.Deleted:
		return 1
	}
	return -1
}

// joinTopic merges two valid entries of one name (see above). The result
// shares nothing with either.
func joinTopic(a, b TopicEntry) TopicEntry {
	switch c := compareLineage(a, b); {
	case c > 0:
		return withLedOf(a.clone(), b)
	case c < 0:
		return withLedOf(b.clone(), a)
	case a.Deleted:
		// One tombstone: equal versions (equal born) mean one delete.
		return a.clone()
	}
	// Version winner for the fixed fields; at equal versions (one write,
	// so equal fields but for a bug) the content decides.
	w, l := a, b
	if c := a.version().compare(b.version()); c < 0 || c == 0 && compareTopicWide(a, b) < 0 {
		w, l = b, a
	}
	out := w.clone()
	// The configs from the newer topic-wide write, wherever it is.
	cw := w
	if c := l.wide().compare(w.wide()); c > 0 || c == 0 && compareConfig(l.Config, w.Config) > 0 {
		cw = l
	}
	out.Config = maps.Clone(cw.Config)
	n := max(a.Partitions, b.Partitions)
	out.Partitions = n
	out.Replicas, out.Moves, out.Pinned = make([][]int32, n), nil, nil
	sw, sl := w.stamps(), l.stamps()
	st := make([]Stamp, n)
	for p := range n {
		src, s := w, Stamp{}
		switch {
		case p >= w.Partitions:
			src, s = l, sl[p]
		case p >= l.Partitions:
			s = sw[p]
		default:
			s = sw[p]
			if c := sl[p].compare(s); c > 0 || c == 0 && comparePartition(l, w, p) > 0 {
				src, s = l, sl[p]
			}
		}
		st[p] = s
		out.Replicas[p] = slices.Clone(src.Replicas[p])
		if m, ok := src.Move(p); ok {
			out.Moves = append(out.Moves, PartitionMove{Partition: p, Target: slices.Clone(m.Target), Started: m.Started})
		}
		if src.IsPinned(p) {
			out.Pinned = append(out.Pinned, p)
		}
	}
	out.setStamps(w.born(), cw.wide(), st)
	out.Led = unionLed(a.Led, b.Led)
	return out
}

// comparePartition orders partition p's placement in a and b by content,
// only to break ties of equal stamps deterministically.
func comparePartition(a, b TopicEntry, p int32) int {
	if c := slices.Compare(a.Replicas[p], b.Replicas[p]); c != 0 {
		return c
	}
	ma, oka := a.Move(p)
	mb, okb := b.Move(p)
	if oka != okb {
		if oka {
			return 1
		}
		return -1
	}
	if c := slices.Compare(ma.Target, mb.Target); c != 0 {
		return c
	}
	if c := cmp.Compare(ma.Started, mb.Started); c != 0 {
		return c
	}
	pa, pb := a.IsPinned(p), b.IsPinned(p)
	if pa != pb {
		if pa {
			return 1
		}
		return -1
	}
	return 0
}

// samePartition tells whether partition p's placement is the same in a and
// b, both having p.
func samePartition(a, b TopicEntry, p int32) bool { return comparePartition(a, b, p) == 0 }

// compareTopicWide orders the topic-wide fields by content, only to break
// ties of equal versions deterministically.
func compareTopicWide(a, b TopicEntry) int {
	if c := cmp.Compare(a.ReplicationFactor, b.ReplicationFactor); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Partitions, b.Partitions); c != 0 {
		return c
	}
	return compareConfig(a.Config, b.Config)
}

// compareConfig orders two topics' configs by content, only to break ties
// of equal stamps deterministically.
// A total order (keys sorted, then values by key), so the merge
// commutes even on such a tie.
func compareConfig(a, b map[string]string) int {
	if c := cmp.Compare(len(a), len(b)); c != 0 {
		return c
	}
	ka, kb := slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b))
	if c := slices.Compare(ka, kb); c != 0 {
		return c
	}
	for _, k := range ka {
		if c := cmp.Compare(a[k], b[k]); c != 0 {
			return c
		}
	}
	return 0
}

// sameEntry tells whether a and b hold the same content, stamps included.
func sameEntry(a, b TopicEntry) bool {
	if a.Name != b.Name || a.ID != b.ID || a.Deleted != b.Deleted || a.version() != b.version() ||
		a.Born != b.Born || a.Wide != b.Wide || !slices.Equal(a.Stamps, b.Stamps) || !slices.Equal(a.Led, b.Led) ||
		a.Partitions != b.Partitions || a.ReplicationFactor != b.ReplicationFactor || !maps.Equal(a.Config, b.Config) ||
		len(a.Replicas) != len(b.Replicas) || len(a.Moves) != len(b.Moves) || len(a.Pinned) != len(b.Pinned) {
		return false
	}
	for p := range a.Replicas {
		if !samePartition(a, b, int32(p)) {
			return false
		}
	}
	return true
}

// appendStampsDigest appends what Catalog.Digest hashes of an entry's
// stamps: born, the partition count and the runs, all fixed width; then,
// when the entry has one, its topic-wide stamp (flagged apart, so entries
// without it hash as before it existed).
func (e TopicEntry) appendStampsDigest(buf []byte) []byte {
	appendStamp := func(buf []byte, s Stamp) []byte {
		buf = binary.BigEndian.AppendUint64(buf, s.Lamport)
		buf = binary.BigEndian.AppendUint32(buf, uint32(s.Origin))
		if s.Auto {
			return append(buf, 1)
		}
		return append(buf, 0)
	}
	buf = appendStamp(buf, e.Born)
	buf = binary.BigEndian.AppendUint32(buf, uint32(e.Partitions))
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(e.Stamps)))
	for _, r := range e.Stamps {
		buf = binary.BigEndian.AppendUint32(buf, uint32(r.From))
		buf = appendStamp(buf, r.Stamp)
	}
	if e.Wide != (Stamp{}) {
		buf = appendStamp(buf, e.Wide)
	}
	return buf
}
