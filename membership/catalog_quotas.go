package membership

// The catalog's client quotas: a keyed entry set (catalog_set.go) like
// the users, ACLs and settings.

// MergeQuotas folds quota entries into the catalog, as MergeACLs does
// ACL entries, and returns those that changed it.
func (c *Catalog) MergeQuotas(entries []QuotaEntry) ([]QuotaEntry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.quotas.merge(&c.clock, entries)
}

// Quotas returns every quota entry, tombstones included, in entry order.
func (c *Catalog) Quotas() []QuotaEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.quotas.all()
}

func (c *Catalog) quota(e QuotaEntity, key string) (QuotaEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.quotas.get(quotaKey{e, key})
}

func (c *Catalog) liveQuotas() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.quotas.m {
		if !e.Deleted {
			n++
		}
	}
	return n
}
