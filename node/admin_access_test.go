package node

// The admin API's authorization against real nodes: state changes need
// the bearer token (or nothing changes), reads are open by default, and a
// cluster whose nodes require the token for reads still pulls from itself.

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/leadership"
)

// adminCall sends method path to n's admin API with token as a bearer
// token ("" for none) and returns the status and body.
func adminCall(t *testing.T, n *Node, method, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+n.AdminAddr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func writeToken(t *testing.T, path, token string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestAdminTokenGuardsStateChanges: without the token, or with another,
// a quarantine purge and a scrub start are refused with 401 and the
// quarantine keeps its entry; with it they work. Reads need no token. A
// token changed in its file is taken on Reload (SIGHUP).
func TestAdminTokenGuardsStateChanges(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "admin-token")
	writeToken(t, tokenFile, "first-token")
	cfg := testConfig(t, filepath.Join(dir, "data"))
	cfg.AdminTokenFile = tokenFile
	n := startNode(t, cfg)

	junk := filepath.Join(cfg.DataDir, "junk-0")
	if err := os.MkdirAll(junk, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := n.quarantine.Move(junk, "test", nil); err != nil {
		t.Fatal(err)
	}
	for _, read := range []string{"/healthz", "/readyz", "/v1/roster", "/v1/quarantine", "/v1/scrub", "/metrics"} {
		if code, body := adminCall(t, n, "GET", read, ""); code != http.StatusOK {
			t.Errorf("GET %s without a token: %d %s, want 200 (reads are open by default)", read, code, body)
		}
	}
	for _, token := range []string{"", "wrong-token", "first-token-and-more"} {
		for _, path := range []string{"/v1/quarantine/purge", "/v1/scrub", "/v1/roster/decommission?id=7"} {
			code, body := adminCall(t, n, "POST", path, token)
			if code != http.StatusUnauthorized || !strings.Contains(body, "token") {
				t.Errorf("POST %s with token %q: %d %q, want 401 naming the token", path, token, code, body)
			}
		}
	}
	if entries, _ := n.quarantine.List(); len(entries) != 1 {
		t.Fatalf("quarantine after refused purges: %d entries, want 1", len(entries))
	}
	if code, body := adminCall(t, n, "POST", "/v1/quarantine/purge", "first-token"); code != http.StatusOK {
		t.Fatalf("purge with the token: %d %s", code, body)
	}
	if entries, _ := n.quarantine.List(); len(entries) != 0 {
		t.Fatalf("quarantine after the purge: %d entries, want none", len(entries))
	}
	if code, body := adminCall(t, n, "POST", "/v1/roster/decommission?id=7", "first-token"); code != http.StatusNotFound {
		t.Errorf("decommission of an unknown broker with the token: %d %s, want 404 (past the guard)", code, body)
	}

	writeToken(t, tokenFile, "second-token")
	if err := n.Reload(); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if code, _ := adminCall(t, n, "POST", "/v1/quarantine/purge", "first-token"); code != http.StatusUnauthorized {
		t.Errorf("the replaced token after reload: %d, want 401", code)
	}
	if code, body := adminCall(t, n, "POST", "/v1/quarantine/purge", "second-token"); code != http.StatusOK {
		t.Errorf("the new token after reload: %d %s", code, body)
	}
	writeToken(t, tokenFile, "")
	if err := n.Reload(); err == nil {
		t.Error("reload of an empty token file succeeded")
	}
	if code, _ := adminCall(t, n, "POST", "/v1/quarantine/purge", "second-token"); code != http.StatusOK {
		t.Errorf("the token kept after a failed reload: %d, want 200", code)
	}
}

// TestAdminTokenForReadsClusterStillPulls: three nodes sharing a token
// required for reads too form a cluster, a topic reaches every catalog,
// peers' pulls (catalog, leadership, replica snapshot) pass with the token
// while a bare GET is refused, and a stopped broker is decommissioned only
// with the token.
func TestAdminTokenForReadsClusterStillPulls(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "admin-token")
	writeToken(t, tokenFile, "cluster-token")
	nodes := startClusterWith(t, 3, func(c *Config) {
		c.AdminTokenFile, c.AdminTokenForReads = tokenFile, true
	})
	createTopic(t, newAdmin(t, nodes[0]), "guarded", 3, nil)
	waitTopic(t, nodes, "guarded")

	for _, path := range []string{"/v1/roster", membership.CatalogPath, leadership.Path, "/metrics"} {
		if code, _ := adminCall(t, nodes[1], "GET", path, ""); code != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d, want 401", path, code)
		}
		if code, _ := adminCall(t, nodes[1], "GET", path, "cluster-token"); code != http.StatusOK {
			t.Errorf("GET %s with the token: %d, want 200", path, code)
		}
	}
	if code, _ := adminCall(t, nodes[1], "GET", "/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz without the token: %d, want 200", code)
	}
	peer := nodes[1].Membership().Local()
	for _, path := range []string{membership.CatalogPath, membership.RosterPath, leadership.Path} {
		if _, err := nodes[0].peerFetchFunc(testCtx(t), peer, path); err != nil {
			t.Errorf("node 1 pulls %s from node 2: %v", path, err)
		}
	}
	_, err := nodes[0].peers.Open(testCtx(t), nodes[1].AdminAddr(), admin.ReplicaSnapshotPath, url.Values{"group": {"bad"}})
	if err == nil || !strings.Contains(err.Error(), "400 Bad Request") {
		t.Errorf("peer client with the token: %v, want 400 (past the guard, a bad group)", err)
	}

	gone := nodes[2]
	stopNode(t, gone)
	rest := nodes[:2]
	waitMembers(t, rest, 2)
	// force: a single-copy partition of "guarded" may be on it.
	decommission := fmt.Sprintf("/v1/roster/decommission?force=1&id=%d", gone.NodeID())
	for _, token := range []string{"", "not-the-token"} {
		if code, _ := adminCall(t, rest[0], "POST", decommission, token); code != http.StatusUnauthorized {
			t.Errorf("decommission with token %q: %d, want 401", token, code)
		}
	}
	if roster := rest[0].Membership().Roster(); !slices.Contains(roster, gone.NodeID()) {
		t.Fatalf("roster %v lost broker %d to a refused decommission", roster, gone.NodeID())
	}
	if code, body := adminCall(t, rest[0], "POST", decommission, "cluster-token"); code != http.StatusOK {
		t.Fatalf("decommission with the token: %d %s", code, body)
	}
	retry.Run(t, 20*time.Second, func() error {
		for _, n := range rest {
			if roster := n.Membership().Roster(); !slices.Equal(roster, []int32{1, 2}) {
				return fmt.Errorf("node %d roster %v, want [1 2]", n.NodeID(), roster)
			}
		}
		return nil
	})
}
