// Package tlsfiles turns certificate, key and CA files into a server
// tls.Config whose certificates can change without a restart: every new
// connection asks for the current configuration (GetConfigForClient), and
// Reload swaps it for one read afresh from the files, on SIGHUP or when
// Watch sees them change. Connections already open keep the certificate
// they were made with. A reload that fails (a half-written file, a key
// that does not match) keeps the previous configuration and says why.
package tlsfiles

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
)

// Files names what a TLS listener is made of.
type Files struct {
	// CertFile and KeyFile are the server's PEM certificate chain and
	// private key. Both empty means no TLS.
	CertFile string
	KeyFile  string
	// ClientCAFile, when set, is a PEM bundle of the CAs client
	// certificates must chain to: clients must present one (mTLS).
	ClientCAFile string
}

// Enabled reports whether any file is named.
func (f Files) Enabled() bool { return f.CertFile != "" || f.KeyFile != "" || f.ClientCAFile != "" }

// Validate refuses a partial set.
func (f Files) Validate() error {
	if !f.Enabled() {
		return nil
	}
	if f.CertFile == "" || f.KeyFile == "" {
		return errors.New("TLS needs both a certificate file and a key file")
	}
	return nil
}

// Source is a reloadable server configuration built from Files.
type Source struct {
	files   Files
	log     logrus.FieldLogger
	current atomic.Pointer[tls.Config]
	mu      sync.Mutex // serializes Reload
	digest  [32]byte   // of the files' bytes as last loaded
}

// New loads the files once; an error means they cannot make a server
// configuration.
func New(files Files, log logrus.FieldLogger) (*Source, error) {
	if err := files.Validate(); err != nil {
		return nil, err
	}
	if !files.Enabled() {
		return nil, errors.New("no TLS files given")
	}
	if log == nil {
		log = logrus.StandardLogger()
	}
	s := &Source{files: files, log: log}
	if _, err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// cipherSuites are the TLS 1.2 suites offered: ECDHE (forward secrecy)
// with an AEAD only, none of the CBC suites Go still enables by default.
// TLS 1.3's suites are all AEADs and not configurable.
var cipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// ServerConfig is the tls.Config to serve with: TLS 1.2 or later,
// cipherSuites for TLS 1.2, and each handshake answered with the
// configuration loaded last.
func (s *Source) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		CipherSuites: cipherSuites,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.current.Load(), nil
		},
	}
}

// ServerConfigWithoutClientCerts is ServerConfig for a listener that asks
// for no client certificate even though the files name a client CA (a
// SASL_SSL listener whose clients authenticate with SASL instead).
func (s *Source) ServerConfigWithoutClientCerts() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		CipherSuites: cipherSuites,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cfg := s.current.Load().Clone()
			cfg.ClientAuth, cfg.ClientCAs = tls.NoClientCert, nil
			return cfg, nil
		},
	}
}

// Certificate is the certificate loaded last, which a node also presents
// as a client to its peers' admin APIs.
func (s *Source) Certificate() *tls.Certificate { return &s.current.Load().Certificates[0] }

// ClientConfig is the configuration of one connection this node dials
// to a peer that serves the same kind of Files: it presents the
// certificate loaded last and trusts the client CA bundle loaded last as
// the CAs of the peer's server certificate (one CA both ways, as between
// the nodes of a cluster). TLS 1.2 or later, cipherSuites for TLS 1.2.
func (s *Source) ClientConfig() *tls.Config {
	cur := s.current.Load()
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		CipherSuites: cipherSuites,
		Certificates: cur.Certificates,
		RootCAs:      cur.ClientCAs,
	}
}

// MutualTLS reports whether client certificates are required.
func (s *Source) MutualTLS() bool { return s.files.ClientCAFile != "" }

// Reload reads the files again and, if they make a valid configuration,
// serves new connections with it. changed is false when the files' bytes
// are what was loaded last.
func (s *Source) Reload() (changed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	certPEM, err := os.ReadFile(s.files.CertFile)
	if err != nil {
		return false, fmt.Errorf("read TLS certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(s.files.KeyFile)
	if err != nil {
		return false, fmt.Errorf("read TLS key: %w", err)
	}
	var caPEM []byte
	if s.files.ClientCAFile != "" {
		if caPEM, err = os.ReadFile(s.files.ClientCAFile); err != nil {
			return false, fmt.Errorf("read TLS client CA bundle: %w", err)
		}
	}
	h := sha256.New()
	for _, b := range [][]byte{certPEM, keyPEM, caPEM} {
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	var digest [32]byte
	copy(digest[:], h.Sum(nil))
	if s.current.Load() != nil && bytes.Equal(digest[:], s.digest[:]) {
		return false, nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false, fmt.Errorf("TLS certificate %s and key %s: %w", s.files.CertFile, s.files.KeyFile, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, CipherSuites: cipherSuites, Certificates: []tls.Certificate{cert}}
	if caPEM != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return false, fmt.Errorf("TLS client CA bundle %s holds no PEM certificate", s.files.ClientCAFile)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	s.current.Store(cfg)
	s.digest = digest
	fields := logrus.Fields{"cert_file": s.files.CertFile, "mtls": caPEM != nil}
	if cert.Leaf != nil {
		fields["subject"] = cert.Leaf.Subject.String()
		fields["not_after"] = cert.Leaf.NotAfter
	}
	s.log.WithFields(fields).Info("TLS certificate loaded")
	return true, nil
}

// Watch reloads the files every interval until ctx ends, so a certificate
// renewed in place (cert-manager, certbot, a systemd credential) is served
// to new connections without a SIGHUP. Comparing the files' bytes rather
// than their modification times also catches a rename over them.
func (s *Source) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.Reload(); err != nil {
			s.log.WithError(err).Warn("TLS files changed but cannot be loaded; serving the previous certificate")
		}
	}
}
