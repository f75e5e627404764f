// Package testcerts makes throwaway certificate authorities and
// certificates for tests of TLS and mTLS, so that no private key is ever
// committed: every test generates its own with crypto/x509, in memory or
// in its temporary directory. ECDSA P-256 keys keep generation fast.
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority that issues server and client certificates.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     *ecdsa.PrivateKey
}

// NewCA makes a self-signed CA named name, valid from an hour ago for a day.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}
}

// Pool is a cert pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Issued is a certificate and its key, PEM-encoded.
type Issued struct {
	CertPEM, KeyPEM []byte
}

// Server issues a server certificate for 127.0.0.1, ::1 and localhost.
func (ca *CA) Server(t testing.TB, name string) Issued {
	return ca.issue(t, name, x509.ExtKeyUsageServerAuth, time.Now().Add(24*time.Hour))
}

// Client issues a client certificate whose subject common name is name.
func (ca *CA) Client(t testing.TB, name string) Issued {
	return ca.issue(t, name, x509.ExtKeyUsageClientAuth, time.Now().Add(24*time.Hour))
}

// ServerAndClient issues a certificate good for both roles, as a node
// presents to clients and to its peers.
func (ca *CA) ServerAndClient(t testing.TB, name string) Issued {
	return ca.issue(t, name, x509.ExtKeyUsageAny, time.Now().Add(24*time.Hour))
}

// ExpiredClient issues a client certificate that expired an hour ago.
func (ca *CA) ExpiredClient(t testing.TB, name string) Issued {
	return ca.issue(t, name, x509.ExtKeyUsageClientAuth, time.Now().Add(-time.Hour))
}

// ExpiredServer issues a server certificate that expired an hour ago.
func (ca *CA) ExpiredServer(t testing.TB, name string) Issued {
	return ca.issue(t, name, x509.ExtKeyUsageServerAuth, time.Now().Add(-time.Hour))
}

func (ca *CA) issue(t testing.TB, name string, usage x509.ExtKeyUsage, notAfter time.Time) Issued {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-2 * time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageAny {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	if usage != x509.ExtKeyUsageClientAuth {
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return Issued{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
}

// TLS is the issued pair as a tls.Certificate.
func (i Issued) TLS(t testing.TB) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(i.CertPEM, i.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Write writes the pair into dir as <name>.crt and <name>.key and returns
// their paths.
func (i Issued) Write(t testing.TB, dir, name string) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	WriteFile(t, certFile, i.CertPEM)
	WriteFile(t, keyFile, i.KeyPEM)
	return certFile, keyFile
}

// WriteCA writes the CA's certificate into dir as <name>.crt.
func (ca *CA) WriteCA(t testing.TB, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name+".crt")
	WriteFile(t, p, ca.CertPEM)
	return p
}

// WriteFile replaces path's content atomically (write, rename), as a
// certificate manager renewing a certificate would.
func WriteFile(t testing.TB, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// ClientConfig is a client tls.Config trusting ca, presenting certs.
func ClientConfig(ca *CA, certs ...tls.Certificate) *tls.Config {
	return &tls.Config{RootCAs: ca.Pool(), Certificates: certs, MinVersion: tls.VersionTLS12, ServerName: "localhost"}
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
