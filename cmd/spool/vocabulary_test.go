package main

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spool-log/spool/client"
	"github.com/spool-log/spool/node"
)

// TestCLIVocabularyAndJSON drives every listing command's -o json and the
// shared position vocabulary against one real in-process node.
func TestCLIVocabularyAndJSON(t *testing.T) {
	n := testNode(t, func(c *node.Config) {
		c.Groups.InitialRebalanceDelay = 0
		c.Groups.OffsetsTopicPartitions = 2
	})
	b := []string{"--brokers", n.KafkaAddr(), "--timeout", "5s"}
	run := func(stdin string, args ...string) (string, string, error) {
		t.Helper()
		return runCLI(t, stdin, append(args, b...)...)
	}
	must := func(stdin string, args ...string) string {
		t.Helper()
		out, errOut, err := run(stdin, args...)
		if err != nil {
			t.Fatalf("spool %v: %v\n%s", args, err, errOut)
		}
		return out
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

	created := must("", "topic", "create", "vocab", "-p", "2")
	if !regexp.MustCompile(`created vocab \(2 partitions, id [0-9a-f-]{36}\)`).MatchString(created) {
		t.Errorf("create output: %q", created)
	}
	// Unkeyed lines spread over both partitions, round-robin.
	_, errOut, err := run("a\nb\nc\nd\ne\nf\n", "produce", "vocab")
	if err != nil || !strings.Contains(errOut, "produced 6 records to vocab (partition 0: 3, partition 1: 3)") {
		t.Fatalf("produce: %v %q", err, errOut)
	}
	_, errOut, err = run("x\n", "produce", "vocab", "--partition", "1")
	if err != nil || !strings.Contains(errOut, "produced 1 record to vocab (partition 1: 1)") {
		t.Fatalf("produce of one record: %v %q", err, errOut)
	}

	var topics []client.ListedTopic
	if err := json.Unmarshal([]byte(must("", "topic", "list", "-o", "json")), &topics); err != nil {
		t.Fatal(err)
	}
	var id string
	for _, tp := range topics {
		if tp.Topic == "vocab" {
			id = tp.ID.String()
			if tp.Partitions != 2 || tp.ReplicationFactor != 1 {
				t.Errorf("topic list -o json: %+v", tp)
			}
		}
	}
	if !uuid.MatchString(id) {
		t.Fatalf("topic list -o json: vocab's id %q is no UUID (%+v)", id, topics)
	}
	var rawDescribe []map[string]any
	if err := json.Unmarshal([]byte(must("", "topic", "describe", "vocab", "-o", "json")), &rawDescribe); err != nil {
		t.Fatal(err)
	}
	if len(rawDescribe) != 1 || rawDescribe[0]["id"] != id {
		t.Fatalf("topic describe -o json: id %v, list says %s", rawDescribe[0]["id"], id)
	}
	parts := rawDescribe[0]["partitions"].([]any)
	p1 := parts[1].(map[string]any)
	if reps, ok := p1["replicas"].([]any); !ok || len(reps) != 1 || p1["end"] != float64(4) || p1["start"] != float64(0) {
		t.Errorf("topic describe -o json partition 1: %v", p1)
	}
	if out := must("", "topic", "describe", "vocab"); !strings.Contains(out, "id "+id) || !regexp.MustCompile(`(?m)^1\s+1\s+0\s+\[1\]\s+\[1\]\s+\[\]\s+0\s+4\s*$`).MatchString(out) {
		t.Errorf("topic describe table:\n%s", out)
	}

	// The position vocabulary.
	for _, c := range []struct {
		from string
		want string
	}{
		{"earliest", "a c e b d f x "},
		{"latest", ""},
		{"-1", "e x "}, // the last record of each partition
		{"2", "e f x "},
		{"time:-1h", "a c e b d f x "},
	} {
		out := must("", "consume", "vocab", "--from", c.from)
		// Partitions interleave as they arrive: compare per partition.
		if got := sortedFields(out); got != sortedFields(c.want) {
			t.Errorf("--from %s printed %q, want %q", c.from, out, c.want)
		}
	}
	for _, bad := range [][]string{{"-n", "-1"}, {"--from", "yesterday"}, {"--from", "time:1h"}, {"--partition", "7"}, {"--partition", "-3"}} {
		if _, _, err := run("", append([]string{"consume", "vocab"}, bad...)...); err == nil {
			t.Errorf("consume %v accepted", bad)
		}
	}

	// consume --group commits as it goes; the group then lists and describes.
	if out := must("", "consume", "vocab", "--group", "readers", "-n", "4"); strings.Count(out, "\n") != 4 {
		t.Fatalf("consume --group -n 4 printed %q", out)
	}
	var listing client.GroupListing
	if err := json.Unmarshal([]byte(must("", "group", "list", "-o", "json")), &listing); err != nil {
		t.Fatal(err)
	}
	if len(listing.Groups) != 1 || listing.Groups[0].Group != "readers" || listing.Groups[0].Coordinator != 1 || len(listing.Unanswered) != 0 {
		t.Errorf("group list -o json: %+v", listing)
	}
	var groups []client.DescribedGroup
	if err := json.Unmarshal([]byte(must("", "group", "describe", "readers", "-o", "json")), &groups); err != nil {
		t.Fatal(err)
	}
	committed := int64(0)
	for _, o := range groups[0].Offsets {
		committed += max(o.Committed, 0)
	}
	if len(groups) != 1 || committed != 4 || groups[0].TotalLag != 3 {
		t.Errorf("group describe -o json after 4 of 7 records: committed %d, %+v", committed, groups)
	}
	// The same group again reads only the rest.
	if out := must("", "consume", "vocab", "--group", "readers"); strings.Count(out, "\n") != 3 {
		t.Errorf("second consume --group printed %q, want the 3 records left", out)
	}

	if _, _, err := run("", "group", "describe", "nobody"); err == nil || !strings.Contains(err.Error(), "no group nobody") {
		t.Errorf("group describe of an unknown group: %v", err)
	}
	// reset-offsets speaks the same vocabulary.
	if out := must("", "group", "reset-offsets", "readers", "--topic", "vocab", "--to", "-1"); !regexp.MustCompile(`(?m)^vocab\s+0\s+2\s*$`).MatchString(out) || !regexp.MustCompile(`(?m)^vocab\s+1\s+3\s*$`).MatchString(out) {
		t.Errorf("reset-offsets --to -1:\n%s", out)
	}
	if out := must("", "consume", "vocab", "--group", "readers"); sortedFields(out) != sortedFields("e x") {
		t.Errorf("after reset to the last record of each partition, consume --group printed %q", out)
	}
	if _, _, err := run("", "group", "reset-offsets", "readers", "--topic", "vocab", "--to", "soon"); err == nil {
		t.Error("reset-offsets --to soon accepted")
	}
	for _, cmd := range [][]string{{"topic", "list"}, {"topic", "describe", "vocab"}, {"group", "list"}, {"group", "describe", "readers"}} {
		if _, _, err := run("", append(cmd, "-o", "yaml")...); err == nil || !strings.Contains(err.Error(), "want table or json") {
			t.Errorf("%v -o yaml: %v", cmd, err)
		}
	}
}

func sortedFields(s string) string {
	f := strings.Fields(s)
	slicesSort(f)
	return strings.Join(f, " ")
}

func slicesSort(s []string) { sort.Strings(s) }
