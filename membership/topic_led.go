package membership

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Which partitions have had a leader. A replica that opens with no Raft state
// cannot tell by itself whether its group is new (every replica empty: it
// must start the group from the catalog's replica list, with a vote) or has
// existed (its disk was replaced: it must rejoin without a vote and take the
// leader's snapshot, for with its votes and log forgotten it could help a
// lagging peer win an election and overwrite entries a majority had
// committed: Raft's "amnesia"). The peers cannot always tell either: the one
// replica that holds the group's history may be the one that is down. So the
// first leader of each partition records it here, and the record arrives
// with the catalog entry that makes a node open the partition.
//
// Led grows only: the merge of one lineage is the union, whatever the
// versions, so no concurrent write can take a mark back, and MarkLed leaves
// the entry's version as it is (a mark changes no placement and no config,
// so it must not win the topic-wide fields over a concurrent alteration).

// LedRun is a half-open range [From, To) of partitions that have had a
// leader.
type LedRun struct {
	From int32 `json:"from"`
	To   int32 `json:"to"`
}

// HasLed tells whether partition p of e has had a leader.
func (e TopicEntry) HasLed(p int32) bool {
	_, ok := slices.BinarySearchFunc(e.Led, p, func(r LedRun, p int32) int {
		switch {
		case r.To <= p:
			return -1
		case r.From > p:
			return 1
		}
		return 0
	})
	return ok
}

// LedCount is how many partitions of e have had a leader.
func (e TopicEntry) LedCount() int32 {
	var n int32
	for _, r := range e.Led {
		n += r.To - r.From
	}
	return n
}

// unionLed is the canonical union of two canonical run lists.
func unionLed(a, b []LedRun) []LedRun {
	if len(b) == 0 {
		return slices.Clone(a)
	}
	if len(a) == 0 {
		return slices.Clone(b)
	}
	all := append(slices.Clone(a), b...)
	slices.SortFunc(all, func(x, y LedRun) int { return int(x.From - y.From) })
	out := []LedRun{all[0]}
	for _, r := range all[1:] {
		last := &out[len(out)-1]
		if r.From <= last.To {
			last.To = max(last.To, r.To)
			continue
		}
		out = append(out, r)
	}
	return out
}

// withLedOf adds to w, the winner of a merge across lineages, the marks of
// the loser l when both are one topic id: concurrent creates of one spec
// (two auto-creates) derive one id, and the partitions' Raft groups, keyed
// by it, are the same groups whichever create's entry wins, so their
// marks hold for the winner too. Clipped to the winner's partitions.
func withLedOf(w, l TopicEntry) TopicEntry {
	if w.Deleted || w.ID != l.ID || len(l.Led) == 0 {
		return w
	}
	var led []LedRun
	for _, r := range unionLed(w.Led, l.Led) {
		if r.From >= w.Partitions {
			break
		}
		r.To = min(r.To, w.Partitions)
		led = append(led, r)
	}
	w.Led = led
	return w
}

// ledRuns turns partitions (any order, repeats allowed) into canonical runs.
func ledRuns(partitions []int32) []LedRun {
	ps := slices.Clone(partitions)
	slices.Sort(ps)
	ps = slices.Compact(ps)
	var out []LedRun
	for _, p := range ps {
		if n := len(out); n > 0 && out[n-1].To == p {
			out[n-1].To++
			continue
		}
		out = append(out, LedRun{From: p, To: p + 1})
	}
	return out
}

// validateLed checks Led is canonical (ascending, disjoint, not adjacent,
// not empty) and within the partitions.
func (e TopicEntry) validateLed() error {
	if e.Deleted && len(e.Led) > 0 {
		return fmt.Errorf("topic %s: tombstone carries led partitions", e.Name)
	}
	if len(e.Led) > int(e.Partitions) {
		return fmt.Errorf("topic %s: %d led runs for %d partitions", e.Name, len(e.Led), e.Partitions)
	}
	for i, r := range e.Led {
		if r.From < 0 || r.From >= r.To || r.To > e.Partitions || (i > 0 && r.From <= e.Led[i-1].To) {
			return fmt.Errorf("topic %s: led runs not ascending disjoint runs of %d partitions", e.Name, e.Partitions)
		}
	}
	return nil
}

// appendLedDigest appends what Catalog.Digest hashes of e's led partitions:
// the run count and the runs, fixed width.
func (e TopicEntry) appendLedDigest(buf []byte) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(e.Led)))
	for _, r := range e.Led {
		buf = binary.BigEndian.AppendUint32(buf, uint32(r.From))
		buf = binary.BigEndian.AppendUint32(buf, uint32(r.To))
	}
	return buf
}

// LedOnly tells whether the change from before to after is marks alone,
// which change no placement, so a node has nothing to open or close for it.
func LedOnly(before, after TopicEntry) bool {
	before.Led, after.Led = nil, nil
	return sameEntry(before, after)
}

// LedMark is MarkLed's word for one topic incarnation: these partitions
// have had a leader.
type LedMark struct {
	Name       string
	ID         TopicID
	Partitions []int32
}

// TopicLed is the id and the led marks of a live topic, without copying
// the rest of its entry.
func (a *Agent) TopicLed(name string) (TopicID, []LedRun, bool) {
	a.catalog.mu.Lock()
	defer a.catalog.mu.Unlock()
	e, ok := a.catalog.topics[name]
	if !ok || e.Deleted {
		return TopicID{}, nil, false
	}
	return e.ID, slices.Clone(e.Led), true
}

// MarkLed records, in one catalog write, that the partitions of each mark
// have had a leader, and spreads the entries it changed. Partitions
// already marked or beyond the count, and topics that are gone or another
// incarnation by now, are left alone. Nothing is written while a live
// member is of a version that drops marks (FeatureLed): it would send
// them back without, and its digest would never match.
func (a *Agent) MarkLed(marks []LedMark) error {
	if err := a.RequireFeature(FeatureLed); err != nil {
		return err
	}
	a.opMu.Lock()
	defer a.opMu.Unlock()
	var next []TopicEntry
	for _, m := range marks {
		cur, ok := a.catalog.Get(m.Name)
		if !ok || cur.Deleted || cur.ID != m.ID {
			continue
		}
		var add []int32
		for _, p := range m.Partitions {
			if p >= 0 && p < cur.Partitions && !cur.HasLed(p) {
				add = append(add, p)
			}
		}
		if len(add) == 0 {
			continue
		}
		e := cur.clone()
		e.Led = unionLed(cur.Led, ledRuns(add))
		next = append(next, e)
	}
	if len(next) == 0 {
		return nil
	}
	if _, err := a.mergeCatalog(next, "local"); err != nil {
		return fmt.Errorf("mark partitions led: %w", err)
	}
	for _, e := range next {
		if stored, ok := a.catalog.Get(e.Name); ok {
			a.broadcastTopic(stored)
		}
	}
	return nil
}
