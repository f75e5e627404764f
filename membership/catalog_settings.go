package membership

// The catalog's cluster settings: a keyed entry set (catalog_set.go) like
// the users and ACLs.

// MergeSettings folds setting entries into the catalog, as MergeUsers does
// user entries, and returns those that changed it.
func (c *Catalog) MergeSettings(entries []SettingEntry) ([]SettingEntry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.settings.merge(&c.clock, entries)
}

// Settings returns every setting entry, by name.
func (c *Catalog) Settings() []SettingEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.settings.all()
}

func (c *Catalog) setting(name string) (SettingEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.settings.get(name)
}
