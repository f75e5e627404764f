package membership

// The catalog's keyed entry sets other than topics (SCRAM users, ACLs):
// each entry carries its own version (Lamport time, origin), a set keeps
// the newest version per key, tombstones included, so merging is a
// per-key maximum and any two catalogs that saw the same entries agree,
// whatever the order of arrival. One implementation serves every kind;
// a kind only says how its entries are keyed, ordered and validated.

import (
	"errors"
	"sort"
)

// versioned is what an entry of a set offers the shared merge.
type versioned[K comparable, E any] interface {
	key() K
	// newerThan is a total order on versions of one key.
	newerThan(o E) bool
	validate() error
	clone() E
	lamport() uint64
	// less orders entries for listings and the digest.
	less(o E) bool
}

// entrySet is one kind's entries; the Catalog's mutex guards it.
type entrySet[K comparable, E versioned[K, E]] struct {
	m map[K]E
	// gen counts changes, so readers can tell when to rebuild what
	// they derive from the entries.
	gen uint64
}

func newEntrySet[K comparable, E versioned[K, E]]() entrySet[K, E] {
	return entrySet[K, E]{m: map[K]E{}}
}

// merge folds entries in: invalid ones are skipped and reported in the
// error, the valid ones applied; clock is raised to every time seen. It
// returns the entries that changed the set, sorted.
func (s *entrySet[K, E]) merge(clock *uint64, entries []E) ([]E, error) {
	var errs []error
	var changed []E
	for _, in := range entries {
		if err := in.validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		*clock = max(*clock, in.lamport())
		if cur, ok := s.m[in.key()]; ok && !in.newerThan(cur) {
			continue
		}
		in = in.clone()
		s.m[in.key()] = in
		changed = append(changed, in.clone())
	}
	if len(changed) > 0 {
		s.gen++
	}
	sortEntries(changed)
	return changed, errors.Join(errs...)
}

// copy is a set whose map can change without touching s's; entries are
// replaced whole, never changed in place, so they are shared.
func (s *entrySet[K, E]) copy() entrySet[K, E] {
	out := entrySet[K, E]{m: make(map[K]E, len(s.m)), gen: s.gen}
	for k, v := range s.m {
		out.m[k] = v
	}
	return out
}

// all copies every entry, tombstones included, sorted.
func (s *entrySet[K, E]) all() []E {
	out := make([]E, 0, len(s.m))
	for _, e := range s.m {
		out = append(out, e.clone())
	}
	sortEntries(out)
	return out
}

func (s *entrySet[K, E]) get(k K) (E, bool) {
	e, ok := s.m[k]
	return e.clone(), ok
}

func sortEntries[K comparable, E versioned[K, E]](es []E) {
	sort.Slice(es, func(i, j int) bool { return es[i].less(es[j]) })
}
