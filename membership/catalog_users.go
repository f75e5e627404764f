package membership

// The catalog's SCRAM users: a keyed entry set (catalog_set.go) ordered
// by UserEntry.newerThan. Persistence, gossip and anti-entropy are the
// topics' (catalog.go, sync.go); users ride in the same file and snapshot.

// MergeUsers folds user entries into the catalog, as Merge does topic
// entries: invalid entries are skipped and reported in the error, the
// valid ones applied. It returns the entries that changed the catalog, by
// name and mechanism.
func (c *Catalog) MergeUsers(entries []UserEntry) ([]UserEntry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.users.merge(&c.clock, entries)
}

// Users returns every user entry, tombstones included, by name then
// mechanism.
func (c *Catalog) Users() []UserEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.users.all()
}

// user returns the entry for name and mechanism, tombstone or not.
func (c *Catalog) user(name, mechanism string) (UserEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.users.get(userKey{name, mechanism})
}

// UsersGeneration changes whenever the users change (never for topics).
func (c *Catalog) UsersGeneration() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.users.gen
}
