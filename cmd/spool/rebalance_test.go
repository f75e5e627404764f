package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/client"
	"github.com/spool-log/spool/internal/retry"
)

// A topic placed on three nodes, then a fourth joins: spool rebalance plan
// shows the partitions hashing now puts on it (the replicas to copy, the
// bytes), apply starts them a bounded number at a time, and once they end
// the plan is empty and every partition is where placement prefers it.
func TestRebalancePlanAndApply(t *testing.T) {
	cl := startCLICluster(t, 3)
	nodes := cl.nodes
	b := []string{"--brokers", nodes[0].KafkaAddr(), "--admin", nodes[0].AdminAddr()}
	if _, _, err := runCLI(t, "", append([]string{"topic", "create", "rb", "--partitions", "6", "--replication-factor", "3"}, b...)...); err != nil {
		t.Fatal(err)
	}
	cl.waitTopic("rb")
	out, _, err := runCLI(t, "", append([]string{"rebalance", "plan", "-o", "json"}, b...)...)
	if err != nil || strings.TrimSpace(out) != "[]" {
		t.Fatalf("plan before any join: %q, %v", out, err)
	}
	cl.add()
	cl.waitRoster(4)
	var plan client.RebalancePlan
	retry.Run(t, 20*time.Second, func() error {
		out, _, err := runCLI(t, "", append([]string{"rebalance", "plan", "-o", "json"}, b...)...)
		if err != nil {
			return err
		}
		plan = nil
		if err := json.Unmarshal([]byte(out), &plan); err != nil {
			return err
		}
		return retry.Check(len(plan) > 0, "empty plan")
	})
	for _, m := range plan {
		if !slices.Contains(m.To, 4) || m.Copies != 1 {
			t.Errorf("planned %+v: want the new broker in, one copy", m)
		}
	}
	out, _, err = runCLI(t, "", append([]string{"rebalance", "plan"}, b...)...)
	if err != nil || !strings.Contains(out, fmt.Sprintf("%d partitions to move", len(plan))) {
		t.Fatalf("plan table: %q, %v", out, err)
	}
	out, _, err = runCLI(t, "", append([]string{"rebalance", "apply", "--max", "1"}, b...)...)
	if err != nil || !strings.Contains(out, fmt.Sprintf("1 of %d planned moves started", len(plan))) {
		t.Fatalf("apply --max 1: %q, %v", out, err)
	}
	retry.Run(t, 90*time.Second, func() error {
		if _, _, err := runCLI(t, "", append([]string{"rebalance", "apply", "--max", "2"}, b...)...); err != nil {
			return err
		}
		out, _, err := runCLI(t, "", append([]string{"placement", "-o", "json"}, b...)...)
		if err != nil {
			return err
		}
		var parts client.Placements
		if err := json.Unmarshal([]byte(out), &parts); err != nil {
			return err
		}
		for _, p := range parts {
			if p.Differs {
				return fmt.Errorf("%s/%d on %v, preferred %v", p.Topic, p.Partition, p.Replicas, p.Preferred)
			}
		}
		return nil
	})
}
