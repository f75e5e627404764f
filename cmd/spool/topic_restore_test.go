package main

import (
	"strings"
	"testing"
)

// TestTopicRestoreWithoutAStore: a node with no object store refuses the
// restore and says so, leaving no topic behind. The restore itself, from a
// real store, is tested with real processes in
// integration/tier_restore_test.go (SeaweedFS, which a Nix build's
// checkPhase, running these tests, does not have).
func TestTopicRestoreWithoutAStore(t *testing.T) {
	n := testNode(t)
	b := []string{"--brokers", n.KafkaAddr()}
	out, errOut, err := runCLI(t, "", append([]string{"topic", "restore", "orders", "-p", "1"}, b...)...)
	t.Logf("restore: %v\n%s%s", err, out, errOut)
	if err == nil {
		t.Fatalf("restore on a node with no store succeeded:\n%s", out)
	}
	list, _, err := runCLI(t, "", append([]string{"topic", "list"}, b...)...)
	if err != nil || strings.Contains(list, "orders") {
		t.Fatalf("after the refused restore, topic list: %v\n%s", err, list)
	}
}
