package admin

import (
	"slices"
	"testing"
)

func TestRedactArgs(t *testing.T) {
	const key = "FW7RVHGukuUljBDO2byJonSblgFhXsTF25K/nDDx0fM="
	in := []string{"spool", "node", "--gossip-key", key, "--gossip-key=" + key, "-gossip-key", key,
		"--gossip-key-file", "/k", "--data-dir", "d"}
	want := []string{"spool", "node", "--gossip-key", Redacted, "--gossip-key=" + Redacted, "-gossip-key", Redacted,
		"--gossip-key-file", "/k", "--data-dir", "d"}
	got := RedactArgs(in)
	if !slices.Equal(got, want) {
		t.Fatalf("RedactArgs:\n got %q\nwant %q", got, want)
	}
	if in[3] != key {
		t.Fatal("RedactArgs changed its argument")
	}
	if f, ok := SecretOnCommandLine(in[1:]); !ok || f != "--gossip-key" {
		t.Fatalf("SecretOnCommandLine: %q %v", f, ok)
	}
	if f, ok := SecretOnCommandLine([]string{"node", "--gossip-key-file", "/k"}); ok {
		t.Fatalf("SecretOnCommandLine sees %q in a key file flag", f)
	}
}
