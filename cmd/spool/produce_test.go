package main

import (
	"strings"
	"testing"
)

func TestProduceLinesAndKeys(t *testing.T) {
	n := testNode(t)
	b := []string{"--brokers", n.KafkaAddr()}
	if _, _, err := runCLI(t, "", append([]string{"topic", "create", "lines", "-p", "2"}, b...)...); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := runCLI(t, "k1=v1\nk2=v2\nnokey\n", append([]string{"produce", "lines", "--key-separator", "=", "--partition", "1"}, b...)...)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	if !strings.Contains(errOut, "produced 3 records") {
		t.Fatalf("produce output: %s", errOut)
	}
	out, _, err := runCLI(t, "", append([]string{"consume", "lines", "--print-keys", "--key-separator", "|", "--partition", "1"}, b...)...)
	if err != nil {
		t.Fatal(err)
	}
	if out != "k1|v1\nk2|v2\n|nokey\n" {
		t.Fatalf("consumed %q", out)
	}
	if out, _, _ := runCLI(t, "", append([]string{"consume", "lines", "--partition", "0"}, b...)...); out != "" {
		t.Fatalf("partition 0 should be empty, got %q", out)
	}
}
