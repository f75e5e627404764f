package transport

// Optional TLS between nodes: with Config.TLS every connection, accepted
// or dialled, is TLS 1.2+ with certificates on both sides, before the
// Spool handshake. An accepted peer that cannot complete the TLS
// handshake (no certificate, one from another CA, plaintext) is refused
// and counted (reason "tls") before any byte of it is read as Spool's;
// a dialled peer whose certificate does not verify is unreachable.
// Without Config.TLS connections are plain TCP, as before.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"
)

// TLSConfig makes the transport's connections mutual TLS.
type TLSConfig struct {
	// Server serves accepted connections. It must require and verify
	// client certificates (tls.RequireAndVerifyClientCert, or a
	// GetConfigForClient returning such a configuration).
	Server *tls.Config
	// Client returns the configuration of one dial: the certificate to
	// present and the CAs peers' certificates must chain to. Called per
	// dial, so a reloaded certificate is used from the next connection
	// on. An empty ServerName is set to the host of the peer's address.
	Client func() *tls.Config
}

func (c *TLSConfig) validate() error {
	if c.Server == nil || c.Client == nil {
		return errors.New("TLS needs both a server configuration and a client one")
	}
	if c.Server.MinVersion < tls.VersionTLS12 && c.Server.GetConfigForClient == nil {
		return errors.New("TLS server configuration allows versions before TLS 1.2")
	}
	return nil
}

// serverTLS runs the TLS handshake of an accepted connection within the
// handshake timeout.
func (t *Transport) serverTLS(c net.Conn) (net.Conn, error) {
	tc := tls.Server(c, t.cfg.TLS.Server)
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.HandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	if len(tc.ConnectionState().VerifiedChains) == 0 {
		return nil, errors.New("TLS peer presented no verified client certificate")
	}
	return tc, nil
}

// clientTLS runs the TLS handshake of a dialled connection to addr.
func (l *link) clientTLS(conn net.Conn, addr string) (net.Conn, error) {
	cfg := l.t.cfg.TLS.Client().Clone()
	if cfg.MinVersion < tls.VersionTLS12 {
		cfg.MinVersion = tls.VersionTLS12
	}
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	tc := tls.Client(conn, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), l.t.cfg.HandshakeTimeout)
	defer cancel()
	go func() { // Close must not wait out a handshake
		select {
		case <-l.t.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("TLS handshake with node %d at %s: %w", l.to, addr, err)
	}
	tc.SetDeadline(time.Time{})
	return tc, nil
}
