package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/client"
	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node"
	nodeadmin "github.com/spool-log/spool/node/admin"
)

// spool rebalance pause holds the moves: apply refuses, an explicit
// partition move is recorded and status shows it PAUSED at its first step
// with its bytes to copy, from a node that does not lead it; resume lets
// it go on and status --watch returns once it ended. A move whose leader
// is gone (two of its three voters stopped) shows as unknown and the
// command still answers.
func TestRebalanceStatusPauseResume(t *testing.T) {
	byID := map[int32]*node.Node{}
	c := startCLICluster(t, 4)
	for _, n := range c.nodes {
		byID[n.NodeID()] = n
	}
	first := byID[1]
	if _, _, err := runCLI(t, "", "topic", "create", "st", "--partitions", "1", "--replication-factor", "3", "--brokers", first.KafkaAddr()); err != nil {
		t.Fatal(err)
	}
	c.waitTopic("st")
	adm := adminClient(t, first.KafkaAddr())
	var cur []int32
	retry.Run(t, 20*time.Second, func() error {
		ts, err := adm.ListTopics(t.Context(), "st")
		if err != nil {
			return err
		}
		p := ts["st"].Partitions[0]
		cur = p.Replicas
		return retry.Check(p.Leader >= 0 && len(cur) == 3, "leader %d replicas %v", p.Leader, cur)
	})
	if _, _, err := runCLI(t, strings.Repeat("a record for the move to copy\n", 100), "produce", "st", "--brokers", first.KafkaAddr()); err != nil {
		t.Fatal(err)
	}
	var add int32
	for id := int32(1); id <= 4; id++ {
		if !slices.Contains(cur, id) {
			add = id
		}
	}
	// Asked of cur[0]: it leaves the partition in the first move, and
	// stays up throughout.
	asked := byID[cur[0]]
	b := []string{"--brokers", asked.KafkaAddr(), "--admin", asked.AdminAddr()}
	run := func(args ...string) (string, error) {
		out, _, err := runCLI(t, "", append(args, b...)...)
		return out, err
	}
	if out, err := run("rebalance", "pause"); err != nil || !strings.Contains(out, "rebalancing paused") {
		t.Fatalf("pause: %q %v", out, err)
	}
	if out, err := run("rebalance", "status"); err != nil || !strings.Contains(out, "PAUSED") || !strings.Contains(out, "no move under way") {
		t.Fatalf("status paused, nothing moving: %q %v", out, err)
	}
	if _, err := run("rebalance", "apply"); err == nil || !strings.Contains(err.Error(), "paused") {
		t.Fatalf("apply while paused: %v", err)
	}
	target := []int32{add, cur[1], cur[2]}
	if out, err := run("partition", "move", "st", "0", "--replicas", fmt.Sprintf("%d,%d,%d", target[0], target[1], target[2])); err != nil {
		t.Fatalf("move while paused: %q %v", out, err)
	}
	status := func() (client.RebalanceStatus, error) {
		var st client.RebalanceStatus
		out, err := run("rebalance", "status", "-o", "json")
		if err != nil {
			return st, err
		}
		return st, json.Unmarshal([]byte(out), &st)
	}
	retry.Run(t, 20*time.Second, func() error {
		st, err := status()
		if err != nil {
			return err
		}
		if !st.Paused || len(st.Moves) != 1 {
			return fmt.Errorf("status %+v", st)
		}
		m := st.Moves[0]
		return retry.Check(m.Step == nodeadmin.StepAddingLearner && m.Leader >= 0 && slices.Equal(m.Adding, []int32{add}) && m.StartedMs > 0 &&
			m.BytesToCopy > 0 && st.BytesToCopy == m.BytesToCopy,
			"move %+v", m)
	})
	out, err := run("rebalance", "status")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PAUSED", "adding learner", "st  ", "[", "overall", "eta paused"} {
		if !strings.Contains(out, want) {
			t.Errorf("status table lacks %q:\n%s", want, out)
		}
	}
	if out, err := run("rebalance", "resume"); err != nil || !strings.Contains(out, "rebalancing resumed; 1 moves") {
		t.Fatalf("resume: %q %v", out, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	out, _, err = runCLIContext(ctx, "", append([]string{"rebalance", "status", "--watch", "--interval", "200ms"}, b...)...)
	if err != nil || !strings.HasSuffix(strings.TrimSpace(out), "no move under way") {
		t.Fatalf("status --watch: %q %v", out, err)
	}
	retry.Run(t, 20*time.Second, func() error {
		ts, err := adm.ListTopics(t.Context(), "st")
		if err != nil {
			return err
		}
		got := ts["st"].Partitions[0].Replicas
		return retry.Check(slices.Equal(got, target), "replicas %v, want %v", got, target)
	})

	// A move whose group has lost its majority: unknown, not an error.
	if _, err := run("rebalance", "pause"); err != nil {
		t.Fatal(err)
	}
	if _, err := run("partition", "move", "st", "0", "--replicas", fmt.Sprintf("%d,%d,%d", cur[0], cur[1], cur[2])); err != nil {
		t.Fatal(err)
	}
	for _, id := range target[:2] {
		sctx, scancel := context.WithTimeout(t.Context(), 20*time.Second)
		if err := byID[id].Shutdown(sctx); err != nil {
			t.Fatal(err)
		}
		scancel()
	}
	retry.Run(t, 30*time.Second, func() error {
		st, err := status()
		if err != nil {
			return err
		}
		if len(st.Moves) != 1 {
			return fmt.Errorf("status %+v", st)
		}
		return retry.Check(st.Moves[0].Step == nodeadmin.StepUnknown && st.Moves[0].Error != "", "move %+v", st.Moves[0])
	})
	out, err = run("rebalance", "status")
	if err != nil || !strings.Contains(out, "unknown (") {
		t.Fatalf("status with the leader gone: %q %v", out, err)
	}
}
