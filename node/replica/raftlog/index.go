package raftlog

import (
	"math"
	"sort"
)

// runEntries caps a run, so a truncation or compaction copies little and a
// lookup's binary search is over runs, then direct.
const runEntries = 1 << 16

// run is consecutive entries first, first+1, ... whose batches start at
// base+rel[k].
type run struct {
	first uint64
	base  int64
	rel   []uint32
}

// termStart says entries from index on have term (until the next one).
type termStart struct {
	index, term uint64
}

// indexMap maps the Raft indexes of the entries in the log to the offsets of
// their batches, and to their terms. It holds the entries after snap (the
// entry just before the log, whose term it keeps); end is the offset after
// the last entry, where the next one goes. Not safe for concurrent use.
type indexMap struct {
	snapIndex, snapTerm uint64
	runs                []run
	terms               []termStart
	end                 int64
}

func newIndexMap(snapIndex, snapTerm uint64, start int64) indexMap {
	return indexMap{snapIndex: snapIndex, snapTerm: snapTerm, end: start}
}

func (m *indexMap) firstIndex() uint64 { return m.snapIndex + 1 }

func (m *indexMap) lastIndex() uint64 {
	if len(m.runs) == 0 {
		return m.snapIndex
	}
	r := m.runs[len(m.runs)-1]
	return r.first + uint64(len(r.rel)) - 1
}

// add records the next entry: its batch starts at the current end and the
// next one at next.
func (m *indexMap) add(term uint64, next int64) {
	i := m.lastIndex() + 1
	if n := len(m.terms); n == 0 || m.terms[n-1].term != term {
		m.terms = append(m.terms, termStart{i, term})
	}
	if n := len(m.runs); n == 0 || len(m.runs[n-1].rel) >= runEntries || m.end-m.runs[n-1].base > math.MaxUint32 {
		m.runs = append(m.runs, run{first: i, base: m.end, rel: make([]uint32, 0, 64)})
	}
	r := &m.runs[len(m.runs)-1]
	r.rel = append(r.rel, uint32(m.end-r.base))
	m.end = next
}

// offset is where entry i's batch starts; i must be in [firstIndex,
// lastIndex+1], the latter giving the end.
func (m *indexMap) offset(i uint64) int64 {
	if i > m.lastIndex() {
		return m.end
	}
	k := sort.Search(len(m.runs), func(k int) bool { return m.runs[k].first > i }) - 1
	r := m.runs[k]
	return r.base + int64(r.rel[i-r.first])
}

// term is entry i's term; i must be in [snapIndex, lastIndex].
func (m *indexMap) term(i uint64) uint64 {
	if i == m.snapIndex {
		return m.snapTerm
	}
	k := sort.Search(len(m.terms), func(k int) bool { return m.terms[k].index > i }) - 1
	return m.terms[k].term
}

// truncate drops entries from i on (i in [firstIndex, lastIndex]).
func (m *indexMap) truncate(i uint64) {
	m.end = m.offset(i)
	k := sort.Search(len(m.runs), func(k int) bool { return m.runs[k].first > i }) - 1
	r := &m.runs[k]
	r.rel = r.rel[:i-r.first]
	if len(r.rel) == 0 {
		k--
	}
	// Later runs are dropped; the clipped one keeps its array, which the
	// next add overwrites.
	m.runs = m.runs[:k+1]
	t := sort.Search(len(m.terms), func(t int) bool { return m.terms[t].index >= i })
	m.terms = m.terms[:t]
}

// compact drops entries up to and including i (in [firstIndex, lastIndex]),
// which becomes the snapshot.
func (m *indexMap) compact(i uint64) {
	term, last := m.term(i), m.lastIndex()
	k := sort.Search(len(m.runs), func(k int) bool { return m.runs[k].first > i }) - 1
	r := m.runs[k]
	cut := int(i - r.first + 1)
	runs := make([]run, 0, len(m.runs)-k)
	if cut < len(r.rel) {
		// A fresh array, so the memory of the compacted part goes.
		rel := append([]uint32(nil), r.rel[cut:]...)
		runs = append(runs, run{first: i + 1, base: r.base, rel: rel})
	}
	runs = append(runs, m.runs[k+1:]...)
	m.runs = runs
	t := sort.Search(len(m.terms), func(t int) bool { return m.terms[t].index > i })
	terms := []termStart{}
	if i < last && (t == len(m.terms) || m.terms[t].index != i+1) {
		// The term covering i+1 now starts there.
		terms = append(terms, termStart{i + 1, m.terms[t-1].term})
	}
	m.terms = append(terms, m.terms[t:]...)
	m.snapIndex, m.snapTerm = i, term
}
