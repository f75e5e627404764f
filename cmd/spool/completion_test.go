package main

import (
	"strings"
	"testing"

	"github.com/spool-log/spool/node"
)

// TestCompletion asks cobra's completion entry point (what the shell scripts
// of `spool completion bash|zsh|fish` call) for topic and group names.
func TestCompletion(t *testing.T) {
	n := testNode(t, func(c *node.Config) { c.Groups.InitialRebalanceDelay = 0 })
	b := []string{"--brokers", n.KafkaAddr()}
	if _, _, err := runCLI(t, "", append([]string{"topic", "create", "orders", "other", "-p", "1"}, b...)...); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "o\n", append([]string{"produce", "orders"}, b...)...); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "", append([]string{"consume", "orders", "--group", "billing"}, b...)...); err != nil {
		t.Fatal(err)
	}
	complete := func(args ...string) []string {
		t.Helper()
		out, _, err := runCLI(t, "", append(append([]string{"__complete"}, b...), args...)...)
		if err != nil {
			t.Fatalf("__complete %v: %v", args, err)
		}
		var names []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasPrefix(l, ":") { // the last line is the directive
				names = append(names, l)
			}
		}
		return names
	}
	if got := strings.Join(complete("topic", "describe", "o"), " "); got != "orders other" {
		t.Errorf("topic describe o<TAB>: %q", got)
	}
	if got := strings.Join(complete("consume", "or"), " "); got != "orders" {
		t.Errorf("consume or<TAB>: %q", got)
	}
	if got := strings.Join(complete("group", "describe", ""), " "); got != "billing" {
		t.Errorf("group describe <TAB>: %q", got)
	}
	if got := strings.Join(complete("consume", "orders", "--group", "b"), " "); got != "billing" {
		t.Errorf("consume --group b<TAB>: %q", got)
	}
}
