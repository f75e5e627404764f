package node

import (
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/spool-log/spool/node/admin"
)

// TestPprofOnlyWhenEnabled: /debug/pprof/ is 404 by default; enabled, its
// cmdline never holds a secret flag's value.
func TestPprofOnlyWhenEnabled(t *testing.T) {
	get := func(n *Node, path string) (int, string) {
		resp, err := http.Get("http://" + n.AdminAddr() + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	off := startNode(t, testConfig(t, t.TempDir()))
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap"} {
		if code, _ := get(off, path); code != http.StatusNotFound {
			t.Errorf("GET %s with pprof off: %d, want 404", path, code)
		}
	}

	const key = "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI="
	saved := os.Args
	os.Args = append(slices.Clone(saved), "--gossip-key", key)
	t.Cleanup(func() { os.Args = saved })
	cfg := testConfig(t, t.TempDir())
	cfg.EnablePprof = true
	on := startNode(t, cfg)
	if code, body := get(on, "/debug/pprof/"); code != 200 || !strings.Contains(body, "heap") {
		t.Errorf("GET /debug/pprof/ with pprof on: %d %.200q", code, body)
	}
	code, body := get(on, "/debug/pprof/cmdline")
	if code != 200 || strings.Contains(body, key) || !strings.Contains(body, "--gossip-key\x00"+admin.Redacted) {
		t.Errorf("GET /debug/pprof/cmdline: %d %q", code, body)
	}
}
