package membership

// The catalog's SCRAM users: merging by version (UserEntry.newerThan) and
// reading them back. Persistence, gossip and anti-entropy are the topics'
// (catalog.go, sync.go); users ride in the same file and snapshot.

import (
	"errors"
	"sort"
)

// MergeUsers folds user entries into the catalog, as Merge does topic
// entries: invalid entries are skipped and reported in the error, the
// valid ones applied. It returns the entries that changed the catalog, by
// name and mechanism.
func (c *Catalog) MergeUsers(entries []UserEntry) ([]UserEntry, error) {
	var errs []error
	var changed []UserEntry
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
		if cur, ok := c.users[in.key()]; ok && !in.newerThan(cur) {
			continue
		}
		in = in.clone()
		c.users[in.key()] = in
		changed = append(changed, in.clone())
	}
	if len(changed) > 0 {
		c.usersGen++
	}
	sortUsers(changed)
	return changed, errors.Join(errs...)
}

// Users returns every user entry, tombstones included, by name then
// mechanism.
func (c *Catalog) Users() []UserEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]UserEntry, 0, len(c.users))
	for _, e := range c.users {
		out = append(out, e.clone())
	}
	sortUsers(out)
	return out
}

// user returns the entry for name and mechanism, tombstone or not.
func (c *Catalog) user(name, mechanism string) (UserEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.users[userKey{name, mechanism}]
	return e.clone(), ok
}

// UsersGeneration changes whenever the users change (never for topics).
func (c *Catalog) UsersGeneration() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.usersGen
}

func sortUsers(es []UserEntry) {
	sort.Slice(es, func(i, j int) bool {
		if es[i].Name != es[j].Name {
			return es[i].Name < es[j].Name
		}
		return es[i].Mechanism < es[j].Mechanism
	})
}
