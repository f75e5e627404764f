package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spool-log/spool/node"
)

// TestClientCommandsAdminToken: against a node with --admin-token-file,
// a purge without the token or with another is refused with the node's
// 401 message, and passes with the token from --admin-token-file,
// SPOOL_ADMIN_TOKEN or --admin-token; reads need none.
func TestClientCommandsAdminToken(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "admin-token")
	if err := os.WriteFile(tokenFile, []byte("cli-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := testNode(t, func(c *node.Config) { c.AdminTokenFile = tokenFile })
	purge := []string{"quarantine", "purge", "--admin", n.AdminAddr(), "--timeout", "10s"}

	t.Setenv("SPOOL_ADMIN_TOKEN", "")
	for _, extra := range [][]string{nil, {"--admin-token", "wrong"}} {
		_, _, err := runCLI(t, "", append(purge, extra...)...)
		if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "token") {
			t.Errorf("purge with %v: %v, want the node's 401 about the token", extra, err)
		}
	}
	if out, _, err := runCLI(t, "", "members", "--admin", n.AdminAddr()); err != nil || !strings.Contains(out, "alive") {
		t.Errorf("members without a token: %q %v", out, err)
	}
	for name, extra := range map[string][]string{
		"--admin-token-file": {"--admin-token-file", tokenFile},
		"--admin-token":      {"--admin-token", "cli-token"},
	} {
		if out, errOut, err := runCLI(t, "", append(purge, extra...)...); err != nil || !strings.Contains(out, "purged 0 entries") {
			t.Errorf("purge with %s: %q %v\n%s", name, out, err, errOut)
		}
	}
	t.Setenv("SPOOL_ADMIN_TOKEN", "cli-token")
	if out, errOut, err := runCLI(t, "", purge...); err != nil || !strings.Contains(out, "purged 0 entries") {
		t.Errorf("purge with SPOOL_ADMIN_TOKEN: %q %v\n%s", out, err, errOut)
	}
}
