package main

import (
	"strings"
	"testing"

	"github.com/spool-log/spool/node"
)

// spool acl add, list and delete against a node, and what the ACLs do:
// once a topic has one, the anonymous CLI may no longer produce to it.
func TestACLCommands(t *testing.T) {
	n := testNode(t)
	b := []string{"--brokers", n.KafkaAddr(), "--timeout", "10s"}
	run := func(args ...string) string {
		t.Helper()
		out, errOut, err := runCLI(t, "", append(args, b...)...)
		if err != nil {
			t.Fatalf("spool %v: %v\n%s", args, err, errOut)
		}
		return out
	}
	fails := func(want string, args ...string) {
		t.Helper()
		if _, _, err := runCLI(t, "", append(args, b...)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("spool %v: %v, want an error with %q", args, err, want)
		}
	}
	run("topic", "create", "orders")
	run("produce", "orders") // no ACLs: everyone may

	// The anonymous CLI keeps the cluster, so it can go on managing ACLs.
	run("acl", "add", "--principal", "User:ANONYMOUS", "--operation", "all", "--cluster")
	out := run("acl", "add", "--principal", "User:alice", "--operation", "read,write", "--topic", "orders")
	if !strings.Contains(out, "allow User:alice read on topic orders from *") || !strings.Contains(out, "write on topic orders") {
		t.Fatalf("add output: %s", out)
	}
	run("acl", "add", "--principal", "User:alice", "--operation", "read", "--group", "app-", "--pattern", "prefixed")
	run("acl", "add", "--principal", "User:*", "--operation", "describe", "--topic", "ord", "--pattern", "prefixed", "--deny", "--host", "10.1.2.3")

	out = run("acl", "list")
	for _, want := range []string{"CLUSTER", "kafka-cluster", "User:ANONYMOUS", "ALL", "GROUP", "app-", "PREFIXED", "DENY", "10.1.2.3"} {
		if !strings.Contains(out, want) {
			t.Fatalf("list lacks %q:\n%s", want, out)
		}
	}
	out = run("acl", "list", "--topic", "orders", "--pattern", "match")
	if strings.Count(out, "\n") != 4 || strings.Contains(out, "GROUP") {
		t.Fatalf("list --topic orders --pattern match: want alice's two and the prefixed deny:\n%s", out)
	}
	if out := run("acl", "list", "--principal", "User:alice", "-o", "json"); !strings.Contains(out, `"resource": "app-"`) {
		t.Fatalf("list -o json: %s", out)
	}

	// orders has ACLs now, none for the anonymous CLI: refused.
	if _, _, err := runCLI(t, "x\n", append([]string{"produce", "orders"}, b...)...); err == nil || !strings.Contains(err.Error(), "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("anonymous produce to orders after ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	fails("every ACL", "acl", "delete")
	fails("--principal", "acl", "add", "--operation", "read", "--topic", "x")
	fails("operation", "acl", "add", "--principal", "User:a", "--operation", "fly", "--topic", "x")
	fails("one of", "acl", "add", "--principal", "User:a", "--operation", "read", "--topic", "x", "--group", "y")
	fails("INVALID_REQUEST", "acl", "add", "--principal", "alice", "--operation", "read", "--topic", "x")

	out = run("acl", "delete", "--principal", "User:alice", "--topic", "orders")
	if strings.Count(out, "User:alice") != 2 {
		t.Fatalf("delete alice on orders:\n%s", out)
	}
	out = run("acl", "list")
	if strings.Contains(out, "orders") {
		t.Fatalf("list after delete:\n%s", out)
	}
	run("acl", "delete", "--all")
	if out := run("acl", "list"); strings.Count(out, "\n") != 1 {
		t.Fatalf("list after delete --all:\n%s", out)
	}
	run("produce", "orders") // no ACLs again: open
}

// --super-users splits on ; as Kafka's super.users, keeping the commas
// of a certificate subject.
func TestSuperUsersFlag(t *testing.T) {
	s := securityFlags{kafkaProtocol: "PLAINTEXT", superUsers: "User:admin; User:CN=ops,O=acme;"}
	cfg := node.DefaultConfig()
	if err := s.apply(&cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.SuperUsers) != 2 || cfg.SuperUsers[0] != "User:admin" || cfg.SuperUsers[1] != "User:CN=ops,O=acme" {
		t.Fatalf("super users %q", cfg.SuperUsers)
	}
}
