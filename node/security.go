package node

// The node's TLS (Kafka listeners, admin API, Raft transport), admin
// token and SASL material, loaded in New and reloaded without a restart:
// on Reload (SIGHUP from `spool node`) and, for the TLS files, every
// TLSReloadInterval. New connections get the new certificate or
// credentials; open ones keep what they were made with.

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
	"github.com/spool-log/spool/node/sasl"
	"github.com/spool-log/spool/node/tlsfiles"
)

// loadSecurity reads the TLS files and SASL credentials the config names.
func (n *Node) loadSecurity() error {
	var err error
	if n.cfg.TLS.Enabled() {
		if n.kafkaTLS, err = tlsfiles.New(n.cfg.TLS, n.log.WithField("tls", "kafka")); err != nil {
			return fmt.Errorf("kafka TLS: %w", err)
		}
	}
	if n.cfg.AdminTLS.Enabled() {
		if n.adminTLS, err = tlsfiles.New(n.cfg.AdminTLS, n.log.WithField("tls", "admin")); err != nil {
			return fmt.Errorf("admin TLS: %w", err)
		}
	}
	if n.cfg.RaftTLS.Enabled() {
		if n.raftTLS, err = tlsfiles.New(n.cfg.RaftTLS, n.log.WithField("tls", "raft")); err != nil {
			return fmt.Errorf("raft TLS: %w", err)
		}
	}
	if n.cfg.AdminTokenFile != "" {
		if n.adminToken, err = admin.LoadToken(n.cfg.AdminTokenFile); err != nil {
			return err
		}
	}
	store, err := n.cfg.SASL.loadCredentials()
	if err != nil {
		return err
	}
	if n.cfg.usesSASL() && store.Len() == 0 {
		return errors.New("a SASL listener is configured but no SASL user is: give a credentials file or a bootstrap user")
	}
	n.saslStore.Store(store)
	if n.peerFetchFunc, err = n.peerFetch(); err != nil {
		return err
	}
	// The password has been hashed; the config keeps no copy of it.
	n.cfg.SASL.BootstrapPassword = ""
	return nil
}

// Reload reads the TLS files, the admin token file and the SASL
// credentials file again. What cannot be loaded is reported and the
// previous material kept.
func (n *Node) Reload() error {
	var errs []error
	for _, src := range []*tlsfiles.Source{n.kafkaTLS, n.adminTLS, n.raftTLS} {
		if src == nil {
			continue
		}
		if _, err := src.Reload(); err != nil {
			errs = append(errs, err)
		}
	}
	if n.adminToken != nil {
		if err := n.adminToken.Reload(); err != nil {
			errs = append(errs, err)
		}
	}
	if n.cfg.SASL.CredentialsFile != "" {
		// The bootstrap user's credentials are kept: its password is gone.
		store, err := n.cfg.SASL.loadCredentials()
		if err != nil {
			errs = append(errs, err)
		} else {
			n.keepBootstrapUser(store)
			n.saslStore.Store(store)
			n.log.WithField("users", store.Len()).Info("SASL credentials reloaded")
		}
	}
	return errors.Join(errs...)
}

// keepBootstrapUser copies the bootstrap user's credentials into a
// reloaded store.
func (n *Node) keepBootstrapUser(store *sasl.Store) {
	user := n.cfg.SASL.BootstrapUser
	if user == "" {
		return
	}
	old := n.saslStore.Load()
	for _, m := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
		if c, ok := old.Lookup(user, m); ok {
			store.Set(user, c)
		}
	}
}

// startTLSReload checks the TLS files every TLSReloadInterval.
func (n *Node) startTLSReload() {
	if n.cfg.TLSReloadInterval <= 0 {
		return
	}
	for _, src := range []*tlsfiles.Source{n.kafkaTLS, n.adminTLS, n.raftTLS} {
		if src != nil {
			n.loops.Go(func(ctx context.Context) { src.Watch(ctx, n.cfg.TLSReloadInterval) })
		}
	}
}

// peerFetch is how this node pulls state from its peers' admin APIs: plain
// HTTP, or, when its own admin API is TLS, HTTPS trusting
// AdminTLSPeerCAFile (else the admin client CA bundle, else the system's
// roots) and presenting the admin certificate, so that peers requiring
// client certificates accept it. It also sets the client and scheme of
// the replica snapshot copies (node/replication/snapshots.go), which travel
// the same way but may stream for long. Both present the admin token, if
// the node has one (withAdminToken).
func (n *Node) peerFetch() (membership.FetchFunc, error) {
	client := n.withAdminToken(&http.Client{Timeout: 10 * time.Second})
	n.peers = peers.New(nil, n.withAdminToken)
	if n.adminTLS == nil {
		return membership.HTTPFetch(client), nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	caFile := n.cfg.AdminTLSPeerCAFile
	if caFile == "" {
		caFile = n.cfg.AdminTLS.ClientCAFile
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
		return n.adminTLS.Certificate(), nil
	}
	client = n.withAdminToken(&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}})
	n.peers = peers.New(cfg, n.withAdminToken)
	return membership.HTTPSFetch(client), nil
}
