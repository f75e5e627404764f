package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spool-log/spool/client"
)

// spool quota set, list and delete against a node: Kafka's entities and
// keys, -o json, and what the node or the CLI refuses.
func TestQuotaCommands(t *testing.T) {
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
	if out := run("quota", "list"); strings.TrimSpace(out) != "ENTITY  QUOTAS" {
		t.Fatalf("list with no quotas:\n%s", out)
	}
	out := run("quota", "set", "--user", "alice", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152")
	if !strings.Contains(out, "user=alice: set consumer_byte_rate=2097152,producer_byte_rate=1048576") {
		t.Fatalf("set output: %s", out)
	}
	run("quota", "set", "--user", "alice", "--client-id", "app", "--add-config", "producer_byte_rate=524288")
	run("quota", "set", "--user-default", "--client-id-default", "--add-config", "request_percentage=25.5")
	run("quota", "set", "--ip", "10.1.2.3", "--add-config", "connection_creation_rate=20")
	run("quota", "set", "--ip-default", "--add-config", "connection_creation_rate=100")

	out = run("quota", "list")
	for _, want := range []string{
		"user=alice  ", "consumer_byte_rate=2097152,producer_byte_rate=1048576",
		"user=alice,client-id=app", "producer_byte_rate=524288",
		"user=<default>,client-id=<default>", "request_percentage=25.5",
		"ip=10.1.2.3", "connection_creation_rate=20", "ip=<default>",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("list lacks %q:\n%s", want, out)
		}
	}
	if got := strings.Count(out, "\n"); got != 6 {
		t.Fatalf("list: %d lines, want a header and 5 entities:\n%s", got, out)
	}
	// One entity, exactly.
	out = run("quota", "list", "--user", "alice")
	if strings.Count(out, "\n") != 2 || strings.Contains(out, "client-id=app") {
		t.Fatalf("list --user alice:\n%s", out)
	}
	var qs client.Quotas
	if err := json.Unmarshal([]byte(run("quota", "list", "--user-default", "--client-id-default", "-o", "json")), &qs); err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || len(qs[0].Entity) != 2 || qs[0].Entity[0].Type != "user" || qs[0].Entity[0].Name != nil ||
		qs[0].Entity[1].Type != "client-id" || qs[0].Values["request_percentage"] != 25.5 {
		t.Fatalf("list -o json of the defaults: %+v", qs)
	}

	// Removing one key, then every key of an entity.
	out = run("quota", "set", "--user", "alice", "--delete-config", "consumer_byte_rate")
	if !strings.Contains(out, "user=alice: removed consumer_byte_rate") {
		t.Fatalf("set --delete-config: %s", out)
	}
	if out := run("quota", "list", "--user", "alice"); strings.Contains(out, "consumer_byte_rate") || !strings.Contains(out, "producer_byte_rate=1048576") {
		t.Fatalf("alice after --delete-config:\n%s", out)
	}
	out = run("quota", "delete", "--ip", "10.1.2.3")
	if !strings.Contains(out, "ip=10.1.2.3: removed connection_creation_rate") {
		t.Fatalf("delete: %s", out)
	}
	if out := run("quota", "list", "--ip", "10.1.2.3"); strings.Count(out, "\n") != 1 {
		t.Fatalf("list after delete:\n%s", out)
	}

	fails("INVALID_REQUEST", "quota", "set", "--user", "alice", "--add-config", "producer.byte.rate=1")
	fails("negative", "quota", "set", "--user", "alice", "--add-config", "producer_byte_rate=-5")
	fails("not a number", "quota", "set", "--user", "alice", "--add-config", "producer_byte_rate=fast")
	fails("KEY=VALUE", "quota", "set", "--user", "alice", "--add-config", "producer_byte_rate")
	fails("not a valid IP", "quota", "set", "--ip", "nowhere", "--add-config", "connection_creation_rate=1")
	fails("combined", "quota", "set", "--ip", "10.0.0.1", "--user", "bob", "--add-config", "connection_creation_rate=1")
	fails("not both", "quota", "set", "--user", "bob", "--user-default", "--add-config", "producer_byte_rate=1")
	fails("give the entity", "quota", "set", "--add-config", "producer_byte_rate=1")
	fails("nothing to change", "quota", "set", "--user", "bob")
	fails("has none", "quota", "delete", "--user", "nobody")
	fails("want table or json", "quota", "list", "-o", "yaml")
}
