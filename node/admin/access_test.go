package admin

import (
	"crypto/tls"
	"crypto/x509"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// TestAccessRefusal: which requests need a credential under each setting,
// and which credentials pass.
func TestAccessRefusal(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tok, err := LoadToken(file)
	if err != nil {
		t.Fatal(err)
	}
	verified := &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{}}}}
	cases := []struct {
		name   string
		access Access
		method string
		path   string
		auth   string
		tls    *tls.ConnectionState
		pass   bool
	}{
		{"open API, write", Access{}, "POST", "/v1/scrub", "", nil, true},
		{"token, write without", Access{Token: tok}, "POST", "/v1/scrub", "", nil, false},
		{"token, write with", Access{Token: tok}, "POST", "/v1/scrub", "Bearer s3cret", nil, true},
		{"token, scheme in any case", Access{Token: tok}, "POST", "/v1/scrub", "bearer s3cret", nil, true},
		{"token, wrong", Access{Token: tok}, "DELETE", "/v1/x", "Bearer s3cre", nil, false},
		{"token, basic auth", Access{Token: tok}, "PUT", "/v1/x", "Basic czNjcmV0", nil, false},
		{"token, read", Access{Token: tok}, "GET", "/v1/roster", "", nil, true},
		{"token, pprof", Access{Token: tok}, "GET", "/debug/pprof/profile", "", nil, false},
		{"token, catalog without", Access{Token: tok}, "GET", "/internal/membership/catalog", "", nil, false},
		{"token, catalog with", Access{Token: tok}, "GET", "/internal/membership/catalog", "Bearer s3cret", nil, true},
		{"mTLS, catalog with cert", Access{ClientCerts: true}, "GET", "/internal/membership/catalog", "", verified, true},
		{"open API, catalog", Access{}, "GET", "/internal/membership/catalog", "", nil, true},
		{"token for reads, read", Access{Token: tok, TokenForReads: true}, "GET", "/v1/roster", "", nil, false},
		{"token for reads, health", Access{Token: tok, TokenForReads: true}, "GET", "/healthz", "", nil, true},
		{"token for reads, ready", Access{Token: tok, TokenForReads: true}, "GET", "/readyz", "", nil, true},
		{"mTLS, verified cert writes", Access{ClientCerts: true}, "POST", "/v1/scrub", "", verified, true},
		{"mTLS, no cert", Access{ClientCerts: true}, "POST", "/v1/scrub", "", &tls.ConnectionState{}, false},
		{"mTLS and token, token", Access{ClientCerts: true, Token: tok}, "POST", "/v1/scrub", "Bearer s3cret", &tls.ConnectionState{}, true},
		{"token for reads, console page", Access{Token: tok, TokenForReads: true}, "GET", "/", "", nil, true},
		{"token for reads, console script", Access{Token: tok, TokenForReads: true}, "GET", "/console/console.js", "", nil, true},
		{"token for reads, console state", Access{Token: tok, TokenForReads: true}, "GET", "/v1/console/state", "", nil, false},
		{"token for reads, console state with", Access{Token: tok, TokenForReads: true}, "GET", "/v1/console/state", "Bearer s3cret", nil, true},
		{"token, console page is no write", Access{Token: tok}, "POST", "/", "", nil, false},
		{"token only, a cert is no credential", Access{Token: tok}, "POST", "/v1/scrub", "", verified, false},
	}
	for _, c := range cases {
		r := httptest.NewRequest(c.method, c.path, nil)
		r.TLS = c.tls
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		if got := c.access.refusal(r) == ""; got != c.pass {
			t.Errorf("%s: passes %v, want %v", c.name, got, c.pass)
		}
	}
}
