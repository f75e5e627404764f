package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// spool user add, list and delete against a node: the password from
// stdin, SPOOL_USER_PASSWORD or a file; refusals carry Kafka's error.
func TestUserCommands(t *testing.T) {
	n := testNode(t)
	b := []string{"--brokers", n.KafkaAddr()}
	run := func(stdin string, args ...string) string {
		t.Helper()
		out, _, err := runCLI(t, stdin, append(args, b...)...)
		if err != nil {
			t.Fatalf("spool %v: %v", args, err)
		}
		return out
	}
	if out := run("carol-pw\n", "user", "add", "carol"); !strings.Contains(out, "user carol: SCRAM-SHA-512 set (8192 iterations)") {
		t.Fatalf("add output: %s", out)
	}
	t.Setenv(userPasswordEnv, "carol-pw-256")
	run("", "user", "add", "carol", "--mechanism", "scram-sha-256", "--iterations", "4096")
	t.Setenv(userPasswordEnv, "")
	pwFile := filepath.Join(t.TempDir(), "dave.pw")
	if err := os.WriteFile(pwFile, []byte("dave-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run("", "user", "add", "dave", "--password-file", pwFile)

	out := run("", "user", "list")
	for _, want := range []string{"carol", "SCRAM-SHA-256 (4096 iterations), SCRAM-SHA-512 (8192 iterations)", "dave"} {
		if !strings.Contains(out, want) {
			t.Fatalf("list output lacks %q:\n%s", want, out)
		}
	}
	if out := run("", "user", "list", "-o", "json"); !strings.Contains(out, `"name":"dave"`) && !strings.Contains(out, `"name": "dave"`) {
		t.Fatalf("list -o json: %s", out)
	}

	if _, _, err := runCLI(t, "", append([]string{"user", "add", "erin"}, b...)...); err == nil || !strings.Contains(err.Error(), "no password") {
		t.Fatalf("add without a password: %v", err)
	}
	if _, _, err := runCLI(t, "pw\n", append([]string{"user", "add", "erin", "--iterations", "100"}, b...)...); err == nil {
		t.Fatal("add with 100 iterations succeeded")
	}
	if out := run("", "user", "delete", "carol", "--mechanism", "SCRAM-SHA-256"); !strings.Contains(out, "deleted SCRAM-SHA-256") {
		t.Fatalf("delete one mechanism: %s", out)
	}
	if out := run("", "user", "delete", "dave"); !strings.Contains(out, "deleted SCRAM-SHA-512") {
		t.Fatalf("delete output: %s", out)
	}
	if _, _, err := runCLI(t, "", append([]string{"user", "delete", "dave"}, b...)...); err == nil || !strings.Contains(err.Error(), "no such user") {
		t.Fatalf("second delete: %v", err)
	}
	out = run("", "user", "list")
	if strings.Contains(out, "dave") || strings.Contains(out, "SCRAM-SHA-256") || !strings.Contains(out, "carol") {
		t.Fatalf("list after deletes:\n%s", out)
	}
}
