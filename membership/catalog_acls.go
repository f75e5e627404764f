package membership

// The catalog's ACLs: a keyed entry set (catalog_set.go) like the users.

// MergeACLs folds ACL entries into the catalog, as MergeUsers does user
// entries, and returns those that changed it.
func (c *Catalog) MergeACLs(entries []ACLEntry) ([]ACLEntry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acls.merge(&c.clock, entries)
}

// ACLs returns every ACL entry, tombstones included, in binding order.
func (c *Catalog) ACLs() []ACLEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acls.all()
}

func (c *Catalog) acl(b ACLBinding) (ACLEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acls.get(b)
}
