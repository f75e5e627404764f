package integration

// Reassignment under faults (issue 16): 4 real `spool node` processes, an
// R=3 topic under the replication tests' acks=all load and group
// consumer, a partition moved by kadm's AlterPartitionReassignments onto
// the fourth node in place of its first replica (its preferred leader, so
// leadership moves), and kill -9 mid-move of the partition's leader or of
// the joining node, restarted after. The move completes (the leader that
// next leads the group carries it on), every node's Metadata shows the
// target, and the history checker finds every acknowledged record.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/spool-log/spool/internal/retry"
)

func TestReassignKillLeaderMidMove(t *testing.T) { testReassignKill(t, "leader") }
func TestReassignKillJoinerMidMove(t *testing.T) { testReassignKill(t, "joiner") }

func testReassignKill(t *testing.T, victim string) {
	cycles := soakCycles(t)
	r := startReplication(t, startCluster(t, 4, withQuickGroups))
	byID := map[int32]*Node{}
	for _, n := range r.nodes {
		byID[int32(n.ID)] = n
	}
	adm := kadm.NewClient(franzClient(t, r.nodes[0].KafkaAddr))
	for c := 0; c < cycles; c++ {
		p := int32(c % replPartitions)
		_, parts := metadata(t, r.nodes[0], r.topic)
		cur := parts[p].Replicas
		var add int32 = -1
		for id := range byID {
			if !slices.Contains(cur, id) {
				add = id
			}
		}
		target := append(slices.Clone(cur[1:]), add)
		leader := waitLeader(t, r.nodes, r.topic, p, -1, replStep)

		var req kadm.AlterPartitionAssignmentsReq
		req.Assign(r.topic, p, target)
		rs, err := adm.AlterPartitionAssignments(ctxTimeout(t, 30*time.Second), req)
		if err == nil {
			err = rs.Error()
		}
		if err != nil {
			t.Fatalf("cycle %d: reassign %s/%d to %v: %v", c, r.topic, p, target, err)
		}
		var killed *Node
		switch victim {
		case "leader":
			killed = leader
		default:
			killed = byID[add]
			// Mid-move: the joining node has opened its replica.
			dir := filepath.Join(killed.Dir, r.topic+"-"+strconv.Itoa(int(p)))
			retry.Run(t, replStep, func() error {
				_, err := os.Stat(dir)
				return err
			})
		}
		killed.Kill()
		t.Logf("cycle %d: moving partition %d %v -> %v; killed node %d (%s)", c, p, cur, target, killed.ID, victim)
		r.w.waitProgress(t, nil, replBatch, replStep, fmt.Sprintf("cycle %d, node %d dead mid-move", c, killed.ID))
		killed.Start()
		retry.Run(t, replStep, func() error {
			for _, n := range r.nodes {
				_, parts := metadata(t, n, r.topic)
				if !slices.Equal(parts[p].Replicas, target) {
					return fmt.Errorf("node %d: partition %d replicas %v, want %v", n.ID, p, parts[p].Replicas, target)
				}
			}
			ls, err := adm.ListPartitionReassignments(ctxTimeout(t, 10*time.Second), kadm.TopicsSet{r.topic: {p: {}}})
			if err != nil {
				return err
			}
			if len(ls) != 0 {
				return fmt.Errorf("still moving: %v", ls)
			}
			return nil
		})
		t.Logf("cycle %d: partition %d moved to %v", c, p, target)
		r.w.waitProgress(t, nil, replBatch, replStep, fmt.Sprintf("cycle %d, after the move", c))
	}
	r.finish(t, cycles)
}
