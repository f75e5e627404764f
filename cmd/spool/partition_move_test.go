package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

// spool partition move moves a partition of replication factor 3 onto a
// fourth node and waits for it; the move is then listed no more, a cancel
// finds none, and bad targets are refused with the node's reason.
func TestPartitionMove(t *testing.T) {
	c := startCLICluster(t, 4)
	nodes := c.nodes
	b := []string{"--brokers", nodes[0].KafkaAddr()}
	if _, _, err := runCLI(t, "", append([]string{"topic", "create", "mv", "--partitions", "1", "--replication-factor", "3"}, b...)...); err != nil {
		t.Fatal(err)
	}
	c.waitTopic("mv")
	adm := adminClient(t, nodes[0].KafkaAddr())
	var cur []int32
	retry.Run(t, 20*time.Second, func() error {
		ts, err := adm.ListTopics(t.Context(), "mv")
		if err != nil {
			return err
		}
		p := ts["mv"].Partitions[0]
		if p.Leader < 0 {
			return fmt.Errorf("no leader")
		}
		cur = p.Replicas
		return retry.Check(len(cur) == 3, "replicas %v", cur)
	})
	var add int32
	for id := int32(1); id <= 4; id++ {
		if !slices.Contains(cur, id) {
			add = id
		}
	}
	target := []int32{add, cur[1], cur[2]}
	arg := fmt.Sprintf("%d,%d,%d", target[0], target[1], target[2])
	out, _, err := runCLI(t, "", append([]string{"partition", "move", "mv", "0", "--replicas", arg, "--wait", "50s"}, b...)...)
	if err != nil || !strings.Contains(out, "mv/0: moved to") {
		t.Fatalf("partition move: %q, %v", out, err)
	}
	// Every node's Metadata says so once gossip brought the end of the
	// move (a client may ask any of them).
	retry.Run(t, 20*time.Second, func() error {
		for _, n := range nodes {
			ts, err := adminClient(t, n.KafkaAddr()).ListTopics(t.Context(), "mv")
			if err != nil {
				return err
			}
			if got := ts["mv"].Partitions[0].Replicas; !slices.Equal(got, target) {
				return fmt.Errorf("node %d: replicas %v, want %v", n.NodeID(), got, target)
			}
		}
		return nil
	})
	out, _, err = runCLI(t, "", append([]string{"partition", "moves", "-o", "json"}, b...)...)
	if err != nil || strings.TrimSpace(out) != "[]" {
		t.Fatalf("partition moves after the move: %q, %v", out, err)
	}
	if _, _, err := runCLI(t, "", append([]string{"partition", "move", "mv", "0", "--cancel"}, b...)...); err == nil || !strings.Contains(err.Error(), "NO_REASSIGNMENT_IN_PROGRESS") {
		t.Fatalf("cancel with no move: %v", err)
	}
	if _, _, err := runCLI(t, "", append([]string{"partition", "move", "mv", "0", "--replicas", "1,2"}, b...)...); err == nil || !strings.Contains(err.Error(), "INVALID_REPLICATION_FACTOR") {
		t.Fatalf("a move to two replicas: %v", err)
	}
	if _, _, err := runCLI(t, "", append([]string{"partition", "move", "mv", "0", "--replicas", "1,x,3"}, b...)...); err == nil {
		t.Fatal("a bad broker id was accepted")
	}
}
