package tlsfiles

import (
	"crypto/tls"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/internal/testcerts"
)

// serve accepts TLS connections with src until the test ends.
func serve(t *testing.T, src *Source) string {
	ln, err := tls.Listen("tcp", "127.0.0.1:0", src.ServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.(*tls.Conn).Handshake()
				c.Read(make([]byte, 1))
			}()
		}
	}()
	return ln.Addr().String()
}

// servedSubject is the common name of the certificate a new connection
// gets.
func servedSubject(t *testing.T, addr string, cfg *tls.Config) (string, error) {
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}

// TestReloadServesNewCertificate: a certificate replaced in its files is
// served to new connections after Reload; files that do not load keep the
// previous one; the minimum version is TLS 1.2.
func TestReloadServesNewCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "ca")
	certFile, keyFile := ca.Server(t, "first").Write(t, dir, "server")
	src, err := New(Files{CertFile: certFile, KeyFile: keyFile}, logrus.New())
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, src)
	client := testcerts.ClientConfig(ca)
	if got, err := servedSubject(t, addr, client); err != nil || got != "first" {
		t.Fatalf("served %q, %v", got, err)
	}

	ca.Server(t, "second").Write(t, dir, "server")
	if changed, err := src.Reload(); err != nil || !changed {
		t.Fatalf("reload: changed %v, %v", changed, err)
	}
	if got, err := servedSubject(t, addr, client); err != nil || got != "second" {
		t.Fatalf("after reload served %q, %v", got, err)
	}
	if changed, err := src.Reload(); err != nil || changed {
		t.Fatalf("reload of unchanged files: changed %v, %v", changed, err)
	}

	// A key that does not match its certificate: refused, "second" kept.
	testcerts.WriteFile(t, keyFile, ca.Server(t, "third").KeyPEM)
	if _, err := src.Reload(); err == nil {
		t.Fatal("mismatched key loaded")
	}
	if got, err := servedSubject(t, addr, client); err != nil || got != "second" {
		t.Fatalf("after a failed reload served %q, %v", got, err)
	}

	cbc := testcerts.ClientConfig(ca)
	cbc.MaxVersion = tls.VersionTLS12
	cbc.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}
	if _, err := servedSubject(t, addr, cbc); err == nil {
		t.Fatal("a CBC cipher suite accepted")
	}
	old := testcerts.ClientConfig(ca)
	old.MaxVersion = tls.VersionTLS11
	old.MinVersion = tls.VersionTLS10
	if _, err := servedSubject(t, addr, old); err == nil {
		t.Fatal("TLS 1.1 accepted")
	}
}

// TestClientCARequiresCertificates: with a client CA bundle, a client
// without a certificate from it is refused.
func TestClientCARequiresCertificates(t *testing.T) {
	dir := t.TempDir()
	ca, clientCA, other := testcerts.NewCA(t, "ca"), testcerts.NewCA(t, "clients"), testcerts.NewCA(t, "other")
	certFile, keyFile := ca.Server(t, "server").Write(t, dir, "server")
	src, err := New(Files{CertFile: certFile, KeyFile: keyFile, ClientCAFile: clientCA.WriteCA(t, dir, "clients")}, logrus.New())
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, src)
	if _, err := servedSubject(t, addr, testcerts.ClientConfig(ca, clientCA.Client(t, "ok").TLS(t))); err != nil {
		t.Fatalf("client with a good certificate: %v", err)
	}
	for name, certs := range map[string][]tls.Certificate{"none": nil, "other CA": {other.Client(t, "x").TLS(t)}} {
		// TLS 1.3 reports the refusal at the first read.
		c, err := tls.Dial("tcp", addr, testcerts.ClientConfig(ca, certs...))
		if err == nil {
			_, err = c.Read(make([]byte, 1))
			c.Close()
		}
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := New(Files{CertFile: certFile}, nil); err == nil {
		t.Fatal("a certificate without a key accepted")
	}
}

// TestClientConfigBetweenPeers: two Sources of one CA (the nodes of a
// cluster) connect with mutual TLS, the dialler using ClientConfig; after
// a reload the dialler presents its renewed certificate.
func TestClientConfigBetweenPeers(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "peers-ca")
	caFile := ca.WriteCA(t, dir, "ca")
	load := func(name string) *Source {
		certFile, keyFile := ca.ServerAndClient(t, name).Write(t, dir, name)
		src, err := New(Files{CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile}, logrus.New())
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	server, client := load("server"), load("client")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", server.ServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	seen := make(chan string, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tc := c.(*tls.Conn)
			if tc.Handshake() == nil && len(tc.ConnectionState().PeerCertificates) > 0 {
				seen <- tc.ConnectionState().PeerCertificates[0].Subject.CommonName
			}
			tc.Close()
		}
	}()
	dial := func() string {
		t.Helper()
		cfg := client.ClientConfig()
		if cfg.MinVersion < tls.VersionTLS12 {
			t.Fatalf("client MinVersion %x", cfg.MinVersion)
		}
		c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		if err != nil {
			t.Fatalf("dial a peer of the same CA: %v", err)
		}
		c.Close()
		return <-seen
	}
	if got := dial(); got != "client" {
		t.Fatalf("server saw %q, want client", got)
	}
	ca.ServerAndClient(t, "renewed").Write(t, dir, "client")
	if _, err := client.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := dial(); got != "renewed" {
		t.Fatalf("server saw %q after reload, want renewed", got)
	}
}
