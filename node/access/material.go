package access

// The node's TLS (Kafka listeners, admin API, Raft transport), admin
// token and SASL material, loaded in New and reloaded without a restart:
// on Reload (SIGHUP from `spool node`) and, for the TLS files, every
// TLSReloadInterval (WatchTLS). New connections get the new certificate
// or credentials; open ones keep what they were made with.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/peers"
	"github.com/spool-log/spool/node/tlsfiles"
)

// loadMaterial reads the TLS files, the admin token and the SASL
// credentials the config names, and makes the clients of the peers'
// admin APIs.
func (g *Guard) loadMaterial() error {
	var err error
	if g.cfg.TLS.Enabled() {
		if g.kafkaTLS, err = tlsfiles.New(g.cfg.TLS, g.log.WithField("tls", "kafka")); err != nil {
			return fmt.Errorf("kafka TLS: %w", err)
		}
	}
	if g.cfg.AdminTLS.Enabled() {
		if g.adminTLS, err = tlsfiles.New(g.cfg.AdminTLS, g.log.WithField("tls", "admin")); err != nil {
			return fmt.Errorf("admin TLS: %w", err)
		}
	}
	if g.cfg.RaftTLS.Enabled() {
		if g.raftTLS, err = tlsfiles.New(g.cfg.RaftTLS, g.log.WithField("tls", "raft")); err != nil {
			return fmt.Errorf("raft TLS: %w", err)
		}
	}
	if g.cfg.AdminTokenFile != "" {
		if g.adminToken, err = admin.LoadToken(g.cfg.AdminTokenFile); err != nil {
			return err
		}
	}
	store, err := g.cfg.SASL.LoadCredentials()
	if err != nil {
		return err
	}
	if usesSASL(g.cfg.Listeners) && store.Len() == 0 {
		return errors.New("a SASL listener is configured but no SASL user is: give a credentials file or a bootstrap user")
	}
	g.users.SetOwn(store)
	if g.peerFetch, err = g.peerClients(); err != nil {
		return err
	}
	// The password has been hashed; the config keeps no copy of it.
	g.cfg.SASL.BootstrapPassword = ""
	return nil
}

// Reload reads the TLS files, the admin token file and the SASL
// credentials file again. What cannot be loaded is reported and the
// previous material kept.
func (g *Guard) Reload() error {
	var errs []error
	for _, src := range g.tlsSources() {
		if _, err := src.Reload(); err != nil {
			errs = append(errs, err)
		}
	}
	if g.adminToken != nil {
		if err := g.adminToken.Reload(); err != nil {
			errs = append(errs, err)
		}
	}
	if g.cfg.SASL.CredentialsFile != "" {
		store, err := g.cfg.SASL.LoadCredentials()
		if err != nil {
			errs = append(errs, err)
		} else {
			// The bootstrap user's credentials are kept: its password is gone.
			g.cfg.SASL.KeepBootstrapUser(g.users.Own(), store)
			g.users.SetOwn(store)
			g.log.WithField("users", store.Len()).Info("SASL credentials reloaded")
		}
	}
	return errors.Join(errs...)
}

// tlsSources are the TLS configurations the node has.
func (g *Guard) tlsSources() []*tlsfiles.Source {
	var out []*tlsfiles.Source
	for _, src := range []*tlsfiles.Source{g.kafkaTLS, g.adminTLS, g.raftTLS} {
		if src != nil {
			out = append(out, src)
		}
	}
	return out
}

// WatchTLS has start run a check of the TLS files every
// TLSReloadInterval, one loop a configuration, until its context ends.
func (g *Guard) WatchTLS(start func(func(context.Context)) bool) {
	if g.cfg.TLSReloadInterval <= 0 {
		return
	}
	for _, src := range g.tlsSources() {
		start(func(ctx context.Context) { src.Watch(ctx, g.cfg.TLSReloadInterval) })
	}
}

// AdminTLS is the admin API's TLS configuration; nil without TLS.
func (g *Guard) AdminTLS() *tlsfiles.Source { return g.adminTLS }

// RaftTLS is the Raft transport's TLS configuration; nil without TLS.
func (g *Guard) RaftTLS() *tlsfiles.Source { return g.raftTLS }

// PeerFetch pulls state from peers' admin APIs (HTTP or HTTPS).
func (g *Guard) PeerFetch() membership.FetchFunc { return g.peerFetch }

// Peers makes this node's other calls to its peers' admin APIs: replica
// snapshots, transaction markers, move status.
func (g *Guard) Peers() *peers.Client { return g.peers }

// peerClients is how this node pulls state from its peers' admin APIs:
// plain HTTP, or, when its own admin API is TLS, HTTPS trusting
// AdminTLSPeerCAFile (else the admin client CA bundle, else the system's
// roots) and presenting the admin certificate, so that peers requiring
// client certificates accept it. It also makes g.peers, the client of
// the replica snapshot copies, which travel the same way but may stream
// for long. Both present the admin token, if the node has one
// (withAdminToken).
func (g *Guard) peerClients() (membership.FetchFunc, error) {
	client := g.withAdminToken(&http.Client{Timeout: 10 * time.Second})
	g.peers = peers.New(nil, g.withAdminToken)
	if g.adminTLS == nil {
		return membership.HTTPFetch(client), nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	caFile := g.cfg.AdminTLSPeerCAFile
	if caFile == "" {
		caFile = g.cfg.AdminTLS.ClientCAFile
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("admin TLS peer CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("admin TLS peer CA %s holds no PEM certificate", caFile)
		}
		cfg.RootCAs = pool
	}
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return g.adminTLS.Certificate(), nil
	}
	client = g.withAdminToken(&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}})
	g.peers = peers.New(cfg, g.withAdminToken)
	return membership.HTTPSFetch(client), nil
}

// AdminAccess is the admin API's authorization from the config (who may
// call it; node/admin/access.go decides), with a warning when anyone who
// reaches the admin port may change state.
func (g *Guard) AdminAccess() admin.Access {
	access := admin.Access{
		Token:         g.adminToken,
		TokenForReads: g.cfg.AdminTokenForReads,
		ClientCerts:   g.adminTLS != nil && g.adminTLS.MutualTLS(),
	}
	if access.Open() && g.cfg.AdminAddr != "" {
		g.log.WithField("admin_addr", g.cfg.AdminAddr).Warn("the admin API takes state changes (decommission, quarantine purge) from anyone who reaches it: give --admin-token-file or admin mTLS (--admin-tls-client-ca-file)")
	}
	return access
}

// withAdminToken makes client present the admin token on every request,
// when the node has one: the credential the node presents to its peers'
// admin APIs, so that anti-entropy, leadership and snapshot pulls pass a
// peer that requires it for reads.
func (g *Guard) withAdminToken(client *http.Client) *http.Client {
	if g.adminToken != nil {
		client.Transport = admin.BearerTransport{Base: client.Transport, Token: g.adminToken}
	}
	return client
}
