package node

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/moves"
)

// Rebalancing paused on one node reaches every node; an operator's move
// made while paused is recorded (ListPartitionReassignments lists it) but
// its leader takes no step: no learner joins the group over several
// reassign passes. GET /v1/rebalance on every node (those that do not lead
// the partition ask its leader) shows the move, paused, at "adding learner", with the bytes
// to copy its leader reports, and the leader's /metrics a moving
// partition, bytes remaining and paused (summed over the nodes: each
// leader reports its own). Resumed, the move goes on from
// there and ends; the status lists no move and the moves completed
// counter, summed over the nodes, is 1, with bytes moved.
func TestRebalancePauseStatusAndMetrics(t *testing.T) {
	nodes := startCluster(t, 4)
	const topic = "paused"
	spec := startReplicatedTopic(t, nodes, topic, 1, 3)
	cur := spec.Replicas[0]
	add := brokerOutside(nodes, cur)
	target := append(slices.Clone(cur[1:]), add)
	cl := newClient(t, nodes[0], kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic))
	for i := range 200 {
		if err := cl.ProduceSync(testCtx(t), &kgo.Record{Key: []byte(recordKey(i)), Value: []byte(recordValue(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	if err := nodes[1].agent.SetRebalancePaused(true); err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 10*time.Second, func() error {
		for _, n := range nodes {
			if !n.agent.RebalancePaused() {
				return fmt.Errorf("node %d not paused", n.NodeID())
			}
		}
		return nil
	})
	adm := newAdmin(t, nodes[0])
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, target)
	if rs, err := adm.AlterPartitionAssignments(testCtx(t), req); err != nil || rs.Error() != nil {
		t.Fatalf("move while paused: %v %v", err, rs.Error())
	}
	status := func(n *Node) (admin.RebalanceStatus, error) {
		var st admin.RebalanceStatus
		code, body := getAdmin(n, "/v1/rebalance")
		if code != http.StatusOK {
			return st, fmt.Errorf("GET /v1/rebalance: %d %s", code, body)
		}
		return st, json.Unmarshal([]byte(body), &st)
	}
	// Every node answers for the cluster, the three that do not lead by
	// asking the leader.
	retry.Run(t, 20*time.Second, func() error {
		for _, n := range nodes {
			st, err := status(n)
			if err != nil {
				return err
			}
			if !st.Paused || len(st.Moves) != 1 {
				return fmt.Errorf("node %d: status %+v", n.NodeID(), st)
			}
			m := st.Moves[0]
			if m.Topic != topic || m.Leader < 0 || m.Step != admin.StepAddingLearner || !slices.Equal(m.Adding, []int32{add}) ||
				m.BytesToCopy <= 0 || m.BytesCopied != 0 || m.StartedMs == 0 || m.Error != "" || st.BytesToCopy != m.BytesToCopy {
				return fmt.Errorf("node %d: move %+v", n.NodeID(), m)
			}
		}
		return nil
	})
	// Held: over several reassign passes no learner joins.
	for range 8 {
		for _, n := range nodes {
			if p := n.parts.Get(topic, 0); p != nil && slices.Contains(cur, n.NodeID()) {
				if conf, _ := p.Replica.Conf(); len(conf.Learners) > 0 || !slices.Equal(conf.Voters, sortedIDs(cur)) {
					t.Fatalf("node %d: a paused move stepped: %+v", n.NodeID(), conf)
				}
			}
		}
		time.Sleep(moves.StepEvery)
	}
	// Each leader reports its own moves: summed over the nodes.
	retry.Run(t, 10*time.Second, func() error {
		var moving, remaining, completed float64
		for _, n := range nodes {
			m := scrapeMetrics(n)
			if err := m.check("spool_rebalance_paused", eq(1), "1"); err != nil {
				return fmt.Errorf("node %d: %w", n.NodeID(), err)
			}
			moving += m["spool_rebalance_moving_partitions"]
			remaining += m["spool_rebalance_bytes_remaining"]
			completed += m["spool_rebalance_moves_completed"]
		}
		return retry.Check(moving == 1 && remaining > 0 && completed == 0, "moving %v, bytes remaining %v, completed %v", moving, remaining, completed)
	})

	if err := nodes[2].agent.SetRebalancePaused(false); err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 60*time.Second, func() error {
		st, err := status(nodes[0])
		if err != nil {
			return err
		}
		if st.Paused || len(st.Moves) != 0 {
			return fmt.Errorf("status %+v", st)
		}
		s, _ := nodes[0].catalog.Topic(topic)
		return retry.Check(slices.Equal(s.Replicas[0], target), "replicas %v", s.Replicas[0])
	})
	retry.Run(t, 10*time.Second, func() error {
		var completed, moved float64
		var each []string
		for _, n := range nodes {
			m := scrapeMetrics(n)
			each = append(each, fmt.Sprintf("node %d: completed %v moved %v", n.NodeID(), m["spool_rebalance_moves_completed"], m["spool_rebalance_bytes_moved"]))
			completed += m["spool_rebalance_moves_completed"]
			moved += m["spool_rebalance_bytes_moved"]
			if err := m.check("spool_rebalance_moving_partitions", eq(0), "0"); err != nil {
				return fmt.Errorf("node %d: %w", n.NodeID(), err)
			}
		}
		return retry.Check(completed == 1 && moved > 0, "moves completed %v, bytes moved %v: %v", completed, moved, each)
	})
}

func sortedIDs(ids []int32) []int32 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// sameSet tells whether a and b hold the same brokers, in any order.
func sameSet(a, b []int32) bool {
	return slices.Equal(sortedIDs(a), sortedIDs(b))
}
