package transport

import (
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/testcerts"
)

// tlsFrom is a TLSConfig presenting a certificate of ca named name and
// trusting ca only, on both sides.
func tlsFrom(t *testing.T, ca *testcerts.CA, name string) *TLSConfig {
	cert := ca.ServerAndClient(t, name).TLS(t)
	return &TLSConfig{
		Server: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert},
			ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert},
		Client: func() *tls.Config {
			return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, RootCAs: ca.Pool()}
		},
	}
}

// Two transports over mutual TLS exchange messages both ways; a peer with
// a certificate from another CA, and one speaking plaintext, are refused
// before their handshake is read, counted, and deliver nothing.
func TestTLSPeersExchangeAndStrangersAreRefused(t *testing.T) {
	ca := testcerts.NewCA(t, "raft-ca")
	c := newCluster(t)
	b := c.start(2, "blue", "", func(cfg *Config) { cfg.TLS = tlsFrom(t, ca, "node-2") })
	a := c.start(1, "blue", "", func(cfg *Config) { cfg.TLS = tlsFrom(t, ca, "node-1") })
	for i := 0; i < 10; i++ {
		a.Send(group(i), heartbeat(1, 2, 1))
		b.Send(group(i), heartbeat(2, 1, 1))
	}
	waitCount(t, b.in, 10)
	waitCount(t, a.in, 10)
	if r := b.Stats().Refused; r != 0 {
		t.Fatalf("%d connections refused between peers of one CA", r)
	}

	other := testcerts.NewCA(t, "other-ca")
	for name, tlsCfg := range map[string]*TLSConfig{"another CA": tlsFrom(t, other, "node-3"), "plaintext": nil} {
		before := b.Stats().Refused
		stranger := c.start(3, "blue", "", func(cfg *Config) { cfg.TLS = tlsCfg })
		eventually(t, 10*time.Second, name+" refused and reported", func() error {
			stranger.Send(group(50), heartbeat(3, 2, 1))
			if stranger.rep.unreachableFor(group(50)) == 0 || b.Stats().Refused == before {
				return fmt.Errorf("unreachable %d, refused %d", stranger.rep.unreachableFor(group(50)), b.Stats().Refused-before)
			}
			return nil
		})
		stranger.Close()
		for _, r := range b.in.snapshot() {
			if r.from == 3 {
				t.Fatalf("%s: a message from node 3 was delivered", name)
			}
		}
	}
	if got := b.counter("replication.transport.refused;reason=tls"); got < 2 {
		t.Fatalf("refused;reason=tls metric %v, want 2 or more", got)
	}
}

func TestTLSConfigValidated(t *testing.T) {
	for name, tc := range map[string]*TLSConfig{
		"no client": {Server: &tls.Config{MinVersion: tls.VersionTLS12}},
		"no server": {Client: func() *tls.Config { return &tls.Config{} }},
		"TLS 1.0":   {Server: &tls.Config{MinVersion: tls.VersionTLS10}, Client: func() *tls.Config { return &tls.Config{} }},
	} {
		if err := tc.validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
