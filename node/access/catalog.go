package access

import (
	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/authz"
)

// catalogRef holds the node's catalog once SetCatalog gave it.
type catalogRef struct{ Catalog }

// SetCatalog hands the Guard the node's catalog, once it exists (the
// node's Start). Until then the cluster has no ACLs, users or quotas.
func (g *Guard) SetCatalog(c Catalog) {
	g.catalog.Store(&catalogRef{c})
	g.authz.Store(authz.NewView(g.cfg.Authz, c))
}

// lateCatalog is the node's catalog once it has one, and an empty one
// before. Its generations are the catalog's plus one, so that a view
// built before the catalog existed is rebuilt once it does, whatever its
// generation. The quotas' generation is read on every request a quota
// may apply to: one atomic load and one call to the catalog.
type lateCatalog struct{ g *Guard }

func (l lateCatalog) ACLsGeneration() uint64 {
	if c := l.g.catalog.Load(); c != nil {
		return c.ACLsGeneration() + 1
	}
	return 0
}

func (l lateCatalog) UsersGeneration() uint64 {
	if c := l.g.catalog.Load(); c != nil {
		return c.UsersGeneration() + 1
	}
	return 0
}

func (l lateCatalog) QuotasGeneration() uint64 {
	if c := l.g.catalog.Load(); c != nil {
		return c.QuotasGeneration() + 1
	}
	return 0
}

func (l lateCatalog) ACLs() []membership.ACLBinding {
	if c := l.g.catalog.Load(); c != nil {
		return c.ACLs()
	}
	return nil
}

func (l lateCatalog) Users() []membership.UserEntry {
	if c := l.g.catalog.Load(); c != nil {
		return c.Users()
	}
	return nil
}

func (l lateCatalog) Quotas() []membership.QuotaEntry {
	if c := l.g.catalog.Load(); c != nil {
		return c.Quotas()
	}
	return nil
}
