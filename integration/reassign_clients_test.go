package integration

// Reassignment through the admin clients people use besides kadm (issue
// 16): IBM/sarama's ClusterAdmin and segmentio/kafka-go's Client move a
// partition of an R=3 topic onto the fourth of 4 real nodes with
// AlterPartitionReassignments, see it with ListPartitionReassignments
// while it runs (or not at all once done), find Metadata on every node
// showing the target, and hand leadership to the preferred replica with
// ElectLeaders. A bad target gets Kafka's error.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/spool-log/spool/internal/retry"
)

// reassignTarget is partition p's replicas with the first replaced by the
// node holding none of them, first (the preferred leader changes).
func reassignTarget(t *testing.T, nodes []*Node, topic string, p int32) (cur, target []int32) {
	t.Helper()
	_, parts := metadata(t, nodes[0], topic)
	cur = parts[p].Replicas
	for _, n := range nodes {
		if !slices.Contains(cur, int32(n.ID)) {
			return cur, append([]int32{int32(n.ID)}, cur[1:]...)
		}
	}
	t.Fatalf("no node outside %v", cur)
	return nil, nil
}

// waitReplicas waits until every node's Metadata shows topic/p on target
// with the first of it leading.
func waitReplicas(t *testing.T, nodes []*Node, topic string, p int32, target []int32, leader bool) {
	t.Helper()
	retry.Run(t, 60*time.Second, func() error {
		for _, n := range nodes {
			_, parts := metadata(t, n, topic)
			if got := parts[p].Replicas; !slices.Equal(got, target) {
				return fmt.Errorf("node %d: %s/%d replicas %v, want %v", n.ID, topic, p, got, target)
			}
			if leader && parts[p].Leader != target[0] {
				return fmt.Errorf("node %d: %s/%d led by %d, want %d", n.ID, topic, p, parts[p].Leader, target[0])
			}
		}
		return nil
	})
}

// createR3 creates topic with replication factor 3 and waits until every
// node's Metadata names a leader of each partition.
func createR3(t *testing.T, nodes []*Node, topic string, partitions int32) {
	t.Helper()
	r, err := kadm.NewClient(franzClient(t, nodes[0].KafkaAddr)).CreateTopic(ctxTimeout(t, 30*time.Second), partitions, 3, nil, topic)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	retry.Run(t, 30*time.Second, func() error {
		for _, n := range nodes {
			_, parts := metadata(t, n, topic)
			if len(parts) != int(partitions) {
				return fmt.Errorf("node %d: %s has %d partitions, want %d", n.ID, topic, len(parts), partitions)
			}
			for p, m := range parts {
				if m.ErrorCode != 0 || m.Leader < 0 {
					return fmt.Errorf("node %d: %s/%d error %d, leader %d", n.ID, topic, p, m.ErrorCode, m.Leader)
				}
			}
		}
		return nil
	})
}

func TestReassignSarama(t *testing.T) {
	nodes := startCluster(t, 4)
	const topic = "sarama-move"
	createR3(t, nodes, topic, 2)
	cur, target := reassignTarget(t, nodes, topic, 1)
	adm, err := sarama.NewClusterAdmin([]string{nodes[1].KafkaAddr}, saramaConfig("none"))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	// sarama sends one replica list per partition, from 0: partition 0
	// keeps its replicas (no move), partition 1 moves.
	_, parts := metadata(t, nodes[0], topic)
	if err := adm.AlterPartitionReassignments(topic, [][]int32{parts[0].Replicas, target}); err != nil {
		t.Fatalf("sarama AlterPartitionReassignments %v -> %v: %v", cur, target, err)
	}
	st, err := adm.ListPartitionReassignments(topic, []int32{0, 1})
	if err != nil {
		t.Fatalf("sarama ListPartitionReassignments: %v", err)
	}
	if s, ok := st[topic][1]; ok && !slices.Equal(s.Replicas, target) && !slices.Contains(s.AddingReplicas, target[0]) {
		t.Fatalf("listed move %+v, want one adding %d", s, target[0])
	}
	if _, ok := st[topic][0]; ok {
		t.Fatalf("partition 0 listed as moving: %+v", st[topic][0])
	}
	waitReplicas(t, nodes, topic, 1, target, false)
	retry.Run(t, 30*time.Second, func() error {
		st, err := adm.ListPartitionReassignments(topic, []int32{1})
		if err != nil {
			return err
		}
		return retry.Check(len(st[topic]) == 0, "still listed: %+v", st[topic])
	})
	res, err := adm.ElectLeaders(sarama.PreferredElection, map[string][]int32{topic: {1}})
	if err != nil {
		t.Fatalf("sarama ElectLeaders: %v", err)
	}
	if r := res[topic][1]; r == nil || (r.ErrorCode != sarama.ErrNoError && r.ErrorCode != sarama.ErrElectionNotNeeded) {
		t.Fatalf("preferred election: %+v", r)
	}
	waitReplicas(t, nodes, topic, 1, target, true)
	// Two replicas for a partition of three: Kafka's error.
	err = adm.AlterPartitionReassignments(topic, [][]int32{parts[0].Replicas, target[:2]})
	if !errors.Is(err, sarama.ErrInvalidReplicationFactor) {
		t.Fatalf("a move to two replicas: %v, want INVALID_REPLICATION_FACTOR", err)
	}
}

func TestReassignKafkaGo(t *testing.T) {
	nodes := startCluster(t, 4)
	const topic = "kafkago-move"
	createR3(t, nodes, topic, 1)
	cur, target := reassignTarget(t, nodes, topic, 0)
	cl := &kafka.Client{Addr: kafka.TCP(nodes[2].KafkaAddr), Timeout: 20 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ids := func(xs []int32) []int {
		out := make([]int, len(xs))
		for i, x := range xs {
			out[i] = int(x)
		}
		return out
	}
	resp, err := cl.AlterPartitionReassignments(ctx, &kafka.AlterPartitionReassignmentsRequest{
		Topic:       topic,
		Assignments: []kafka.AlterPartitionReassignmentsRequestAssignment{{PartitionID: 0, BrokerIDs: ids(target)}},
	})
	if err == nil {
		err = resp.Error
	}
	if err == nil && len(resp.PartitionResults) == 1 {
		err = resp.PartitionResults[0].Error
	}
	if err != nil {
		t.Fatalf("kafka-go AlterPartitionReassignments %v -> %v: %v", cur, target, err)
	}
	list := func() ([]kafka.ListPartitionReassignmentsResponsePartition, error) {
		r, err := cl.ListPartitionReassignments(ctx, &kafka.ListPartitionReassignmentsRequest{
			Topics: map[string]kafka.ListPartitionReassignmentsRequestTopic{topic: {PartitionIndexes: []int{0}}},
		})
		if err == nil {
			err = r.Error
		}
		if err != nil {
			return nil, err
		}
		return r.Topics[topic].Partitions, nil
	}
	ps, err := list()
	if err != nil {
		t.Fatalf("kafka-go ListPartitionReassignments: %v", err)
	}
	if len(ps) == 1 && !slices.Contains(ps[0].AddingReplicas, int(target[0])) && !slices.Equal(ps[0].Replicas, ids(target)) {
		t.Fatalf("listed move %+v, want one adding %d", ps[0], target[0])
	}
	waitReplicas(t, nodes, topic, 0, target, false)
	retry.Run(t, 30*time.Second, func() error {
		ps, err := list()
		if err != nil {
			return err
		}
		return retry.Check(len(ps) == 0, "still listed: %+v", ps)
	})
	el, err := cl.ElectLeaders(ctx, &kafka.ElectLeadersRequest{Topic: topic, Partitions: []int{0}})
	if err == nil {
		err = el.Error
	}
	if err != nil {
		t.Fatalf("kafka-go ElectLeaders: %v", err)
	}
	for _, r := range el.PartitionResults {
		if r.Error != nil && !errors.Is(r.Error, kafka.ElectionNotNeeded) {
			t.Fatalf("preferred election of partition %d: %v", r.Partition, r.Error)
		}
	}
	waitReplicas(t, nodes, topic, 0, target, true)
	resp, err = cl.AlterPartitionReassignments(ctx, &kafka.AlterPartitionReassignmentsRequest{
		Topic:       topic,
		Assignments: []kafka.AlterPartitionReassignmentsRequestAssignment{{PartitionID: 0, BrokerIDs: []int{int(target[0]), 99, int(target[2])}}},
	})
	if err == nil {
		err = resp.Error
	}
	if err == nil && len(resp.PartitionResults) == 1 {
		err = resp.PartitionResults[0].Error
	}
	if err == nil {
		t.Fatal("a move onto broker 99, not in the cluster, was accepted")
	}
}
