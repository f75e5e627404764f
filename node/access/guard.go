// Package access is who a Kafka connection is and what it may do, on one
// broker: the Kafka listeners and each connection's state (listener, mTLS
// peer, SASL session), the SASL gate in front of every request, the
// authorizer over the cluster's ACLs asked by every handler, the request
// path's client quotas, and the material all of it is made of (TLS files,
// admin token, SASL credentials) with its reload. The node holds one
// Guard and hands it what it needs from the rest of the broker as the
// small interfaces below (Catalog, Deps); the engines stay in their own
// packages: node/authz (ACL semantics), node/sasl (mechanisms,
// credentials), node/quota (rates), node/tlsfiles (reloadable TLS).
//
// Locks: a Guard has none of its own. The views it reads on the request
// path (authorizer, SASL store, quota table) are immutable builds behind
// atomic pointers, rebuilt on the first request after the catalog
// changes; the TLS sources and the quota manager guard themselves
// (tlsfiles.Source.mu serialises reloads; quota.Manager.mu is held for a
// map lookup and arithmetic only), and a connection's SASL session its
// own fields (sasl.Session.mu). No lock is held across a call out.
package access

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/authz"
	"github.com/spool-log/spool/node/peers"
	"github.com/spool-log/spool/node/quota"
	"github.com/spool-log/spool/node/sasl"
	"github.com/spool-log/spool/node/tlsfiles"
	"github.com/spool-log/spool/wire"
)

// Config is what the node's config says of access (node.Config's fields
// of the same names).
type Config struct {
	// Listeners are the Kafka listeners, the main one first (ListenersOf).
	Listeners []Listener
	TLS       tlsfiles.Files
	AdminTLS  tlsfiles.Files
	RaftTLS   tlsfiles.Files
	// AdminTLSPeerCAFile is what the node trusts of its peers' admin
	// APIs over HTTPS (default: AdminTLS's client CA bundle).
	AdminTLSPeerCAFile string
	AdminTokenFile     string
	AdminTokenForReads bool
	// AdminAddr is the admin API's address, for the warning of an open
	// admin API ("": none).
	AdminAddr         string
	TLSReloadInterval time.Duration
	SASL              sasl.Config
	Authz             authz.Config
	// AuthzHook, when set (tests), sees every authorization a handler
	// asks for.
	AuthzHook func(apiKey int16, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string)
	Quota     quota.Config
	Log       logrus.FieldLogger
}

// Catalog is the cluster's ACLs, SCRAM users and client quotas as the
// node holds them (the membership catalog).
type Catalog interface {
	authz.ACLSource
	sasl.UserSource
	quota.Source
}

// Deps is what the Guard asks of the rest of the node.
type Deps struct {
	// Waits reports a request that may wait (a long poll), whose time a
	// request_percentage does not count.
	Waits func(*wire.Request) bool
	// ServerStats are the node's wire server's counts (TLS handshake
	// failures, connections refused for a connection_creation_rate); ok
	// is false before the server exists.
	ServerStats func() (st wire.Stats, ok bool)
}

// Guard is one node's access control; see the package doc.
type Guard struct {
	cfg  Config
	deps Deps
	log  logrus.FieldLogger

	// kafkaTLS and adminTLS are the reloadable TLS configurations of the
	// SSL/SASL_SSL listeners and the admin API, raftTLS the Raft
	// transport's; nil without TLS (material.go).
	kafkaTLS *tlsfiles.Source
	adminTLS *tlsfiles.Source
	raftTLS  *tlsfiles.Source
	// adminToken is the admin API's bearer token (nil: none), which the
	// node also presents to its peers.
	adminToken *admin.Token
	peerFetch  membership.FetchFunc
	peers      *peers.Client

	// catalog is the node's (SetCatalog), nil before it has one; the
	// views below read it through lateCatalog. authz is the authorizer
	// over its ACLs, a new View once the catalog is set, so that a
	// request asks the catalog directly.
	catalog atomic.Pointer[catalogRef]
	authz   atomic.Pointer[authz.View]
	users   *sasl.Users // the node's SASL users over the cluster's
	quotas  *quota.Manager

	bound []*Bound // every Kafka listener once bound, the main one first

	sasl saslCounts // authentications completed and refused (metrics.go)

	// flushedQuotas are the quota rates' totals, and flushedConnsThrottled
	// wire's ConnectionsThrottled, as of the last FlushQuotaMetrics;
	// flushedSecurity the security counters as of the last
	// FlushSecurityMetrics.
	flushedQuotas         map[quotaMetricKey]quota.Total
	flushedConnsThrottled int64
	flushedSecurity       securityCounts
}

// New loads the material cfg names and makes the views over the
// catalog. It binds nothing: BindListeners does, at the node's Start.
// cfg.SASL.BootstrapPassword is forgotten once hashed: the caller should
// drop its own copy too.
func New(cfg Config, deps Deps) (*Guard, error) {
	g := &Guard{cfg: cfg, deps: deps, log: cfg.Log}
	g.users = sasl.NewUsers(lateCatalog{g}, nil)
	g.authz.Store(authz.NewView(cfg.Authz, lateCatalog{g}))
	g.quotas = quota.New(cfg.Quota, lateCatalog{g})
	if err := g.loadMaterial(); err != nil {
		return nil, err
	}
	return g, nil
}

// Authorizer is the authorizer for the cluster's ACLs as this node holds
// them now.
func (g *Guard) Authorizer() *authz.Authorizer { return g.authz.Load().Authorizer() }

// Bindings are the cluster's ACLs as this node holds them.
func (g *Guard) Bindings() []authz.Binding { return g.authz.Load().Bindings() }

// Requester is the request's principal and host for the authorizer; the
// principal is only worked out when some ACL could refuse it.
func (g *Guard) Requester(ctx context.Context, req *wire.Request) authz.Requester {
	r := authz.Requester{Authorizer: g.authz.Load().Authorizer(), APIKey: req.APIKey, Hook: g.cfg.AuthzHook}
	if r.Authorizer.Open() && r.Hook == nil {
		return r
	}
	r.Principal = principalOf(ConnOf(ctx))
	if req.RemoteAddr != nil {
		r.Host = req.RemoteAddr.String()
		if h, _, err := net.SplitHostPort(r.Host); err == nil {
			r.Host = h
		}
	}
	return r
}

// SASLStore is the store a SASL handshake looks users up in.
func (g *Guard) SASLStore() *sasl.Store { return g.users.Store() }

// QuotasByEntity groups the cluster's client quotas by entity, in entity
// order (DescribeClientQuotas).
func (g *Guard) QuotasByEntity() ([]membership.QuotaEntity, map[membership.QuotaEntity]map[string]float64) {
	return quota.ByEntity(lateCatalog{g}.Quotas())
}
