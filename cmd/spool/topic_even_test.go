package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/membership"
)

// TestTopicEvenFactor: `spool topic create -r 2` is refused with the
// reason, and a topic of factor 2 already in the catalog (as an earlier
// version made them) is described with a note saying what it costs, in
// the table and in JSON; an odd one has none.
func TestTopicEvenFactor(t *testing.T) {
	c := startCLICluster(t, 3)
	b := []string{"--brokers", c.nodes[0].KafkaAddr()}
	_, _, err := runCLI(t, "", append([]string{"topic", "create", "even", "-r", "2"}, b...)...)
	if err == nil || !strings.Contains(err.Error(), "INVALID_REPLICATION_FACTOR") || !strings.Contains(err.Error(), "replication factor 2 is even") {
		t.Fatalf("topic create -r 2: %v, want refused with the reason", err)
	}
	if _, _, err := runCLI(t, "", append([]string{"topic", "create", "odd", "-r", "3"}, b...)...); err != nil {
		t.Fatal(err)
	}
	if _, err := c.nodes[0].Membership().CreateTopic(membership.TopicSpec{Name: "legacy", Partitions: 2, ReplicationFactor: 2}); err != nil {
		t.Fatal(err)
	}
	// Every node knows both before describe, which franz-go may send to
	// any of them once it has the cluster's metadata.
	retry.Run(t, 20*time.Second, func() error {
		for _, n := range c.nodes {
			for _, topic := range []string{"legacy", "odd"} {
				if _, ok := n.Membership().Topic(topic); !ok {
					return fmt.Errorf("node %d does not know %s", n.NodeID(), topic)
				}
			}
		}
		return nil
	})
	out, _, err := runCLI(t, "", append([]string{"topic", "describe", "legacy", "odd"}, b...)...)
	if err != nil {
		t.Fatal(err)
	}
	legacy, odd, _ := strings.Cut(out, "topic odd")
	if !strings.Contains(legacy, "note: replication factor 2 is even") || strings.Contains(odd, "note:") {
		t.Errorf("describe: want a note on legacy only:\n%s", out)
	}
	out, _, err = runCLI(t, "", append([]string{"topic", "describe", "legacy", "-o", "json"}, b...)...)
	if err != nil {
		t.Fatal(err)
	}
	var ds []struct {
		Note string `json:"note"`
	}
	if err := json.Unmarshal([]byte(out), &ds); err != nil || len(ds) != 1 || !strings.Contains(ds[0].Note, "is even") {
		t.Errorf("describe -o json: %+v (%v) in %s", ds, err, out)
	}
}
