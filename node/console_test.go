package node

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/testcerts"
	"github.com/spool-log/spool/node/admin/console"
	"github.com/spool-log/spool/node/tlsfiles"
)

// TestConsoleOverAdminTLS: the console is served on the admin API's TLS
// listener only; with the token required for reads its page loads without
// one (it holds no data) while its JSON needs it.
func TestConsoleOverAdminTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "admin-ca")
	certFile, keyFile := ca.ServerAndClient(t, "spool-admin").Write(t, dir, "admin")
	cfg := testConfig(t, filepath.Join(dir, "data"))
	cfg.AdminTLS = tlsfiles.Files{CertFile: certFile, KeyFile: keyFile}
	cfg.AdminTLSPeerCAFile = ca.WriteCA(t, dir, "ca")
	cfg.AdminTokenFile = filepath.Join(dir, "admin-token")
	cfg.AdminTokenForReads = true
	writeToken(t, cfg.AdminTokenFile, "console-token")
	n := startNode(t, cfg)

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: testcerts.ClientConfig(ca)}}
	get := func(path, token string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "https://"+n.AdminAddr()+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	resp, body := get("/", "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "/console/console.js") || resp.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("GET / over TLS without a token: %s, CSP %q, %.80q", resp.Status, resp.Header.Get("Content-Security-Policy"), body)
	}
	if resp, _ := get("/console/console.js", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /console/console.js: %s", resp.Status)
	}
	for _, path := range []string{"/v1/console/state", "/v1/console/local", "/v1/console/events", "/v1/members"} {
		if resp, _ := get(path, ""); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %s, want 401", path, resp.Status)
		}
	}
	resp, body = get("/v1/console/state", "console-token")
	var st console.State
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &st) != nil || len(st.Nodes) != 1 || st.Nodes[0].Error != "" {
		t.Fatalf("GET /v1/console/state with the token: %s %.200q", resp.Status, body)
	}
	if !n.console.Sampling() {
		t.Error("a read of the state did not start the sampler")
	}
	if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + n.AdminAddr() + "/"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("the console served over plain HTTP on the TLS admin port")
		}
	}
}
