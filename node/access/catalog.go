package access

import "github.com/spool-log/spool/membership"

// lateCatalog is the node's catalog once it has one, and an empty one
// before. Its generations are the catalog's plus one, so that a view
// built before the catalog existed is rebuilt once it does, whatever its
// generation.
type lateCatalog struct{ get func() Catalog }

func (c lateCatalog) ACLsGeneration() uint64   { return genOf(c.get(), Catalog.ACLsGeneration) }
func (c lateCatalog) UsersGeneration() uint64  { return genOf(c.get(), Catalog.UsersGeneration) }
func (c lateCatalog) QuotasGeneration() uint64 { return genOf(c.get(), Catalog.QuotasGeneration) }

func (c lateCatalog) ACLs() []membership.ACLBinding   { return listOf(c.get(), Catalog.ACLs) }
func (c lateCatalog) Users() []membership.UserEntry   { return listOf(c.get(), Catalog.Users) }
func (c lateCatalog) Quotas() []membership.QuotaEntry { return listOf(c.get(), Catalog.Quotas) }

func genOf(c Catalog, gen func(Catalog) uint64) uint64 {
	if c == nil {
		return 0
	}
	return gen(c) + 1
}

func listOf[T any](c Catalog, list func(Catalog) []T) []T {
	if c == nil {
		return nil
	}
	return list(c)
}
