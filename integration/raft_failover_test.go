package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
)

// startReplicatedTopic creates topic on nodes with replication factor rf
// and waits until every node lists it and Metadata from every running
// node names one leader for each partition.
func startReplicatedTopic(t *testing.T, nodes []*Node, topic string, partitions int32, rf int16) {
	t.Helper()
	adm := kadm.NewClient(franzClient(t, nodes[0].KafkaAddr))
	resp, err := adm.CreateTopic(ctxTimeout(t, 20*time.Second), partitions, rf, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s (R=%d): %v %v", topic, rf, err, resp.Err)
	}
	waitTopicEverywhere(t, nodes, topic)
	retry.Run(t, 30*time.Second, func() error {
		_, err := raftLeader(t, nodes, topic, partitions)
		return err
	})
}

// raftLeader is the node every running node's Metadata names as the leader
// of each partition of topic (all partitions led by the same node is not
// required; the first partition's leader is returned).
func raftLeader(t testing.TB, nodes []*Node, topic string, partitions int32) (*Node, error) {
	t.Helper()
	var lead int32 = -1
	for _, n := range nodes {
		if !n.Running() {
			continue
		}
		_, parts := metadata(t, n, topic)
		if int32(len(parts)) != partitions {
			return nil, fmt.Errorf("node %d: %d partitions", n.ID, len(parts))
		}
		for p, pm := range parts {
			if pm.Leader < 0 || pm.ErrorCode != 0 {
				return nil, fmt.Errorf("node %d: partition %d leader %d error %d", n.ID, p, pm.Leader, pm.ErrorCode)
			}
		}
		if lead >= 0 && parts[0].Leader != lead {
			return nil, fmt.Errorf("node %d names leader %d, another %d", n.ID, parts[0].Leader, lead)
		}
		lead = parts[0].Leader
	}
	for _, n := range nodes {
		if int32(n.ID) == lead && n.Running() {
			return n, nil
		}
	}
	return nil, fmt.Errorf("leader %d is not running", lead)
}

// TestRaftLeaderKilled: three real nodes, a topic of replication factor 3,
// franz-go producing with acks=all (idempotent, default retries); the
// leader's process is killed with SIGKILL mid-stream; another replica is
// elected, produce goes on, and every acknowledged record is read back
// exactly once at the offset it was acknowledged at.
func TestRaftLeaderKilled(t *testing.T) { testRaftLeaderKilled(t, false) }

// TestRaftQuiescedLeaderKilled: the same with the partition idle before the
// kill, its Raft group asleep on all three nodes (no ticks, so no election
// timer runs on the followers): the leader's connections closing wake them.
func TestRaftQuiescedLeaderKilled(t *testing.T) { testRaftLeaderKilled(t, true) }

func testRaftLeaderKilled(t *testing.T, quiesced bool) {
	nodes := startCluster(t, 3)
	const topic = "raft-kill"
	startReplicatedTopic(t, nodes, topic, 1, 3)
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.KafkaAddr)
	}
	ctx := ctxTimeout(t, 2*time.Minute)
	cl := franzClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RequestRetries(100), kgo.RetryTimeout(60*time.Second))
	acked := map[string]int64{}
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			k := fmt.Sprintf("k%05d", i)
			r := &kgo.Record{Key: []byte(k), Value: []byte("v-" + k)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", k, err)
			}
			acked[k] = r.Offset
		}
	}
	produce(0, 200)
	lead, err := raftLeader(t, nodes, topic, 1)
	if err != nil {
		t.Fatal(err)
	}
	if quiesced {
		// Every replica of every node asleep, this one included.
		retry.Run(t, 30*time.Second, func() error {
			for _, n := range nodes {
				m := scrapeMetrics(t, n)
				if q, all := m["spool_replication_quiesced_replicas"], m["spool_partitions"]; q < 1 || q != all {
					return fmt.Errorf("node %d: %v of its %v replicas quiesced", n.ID, q, all)
				}
			}
			return nil
		})
	}
	lead.Kill()
	killed := time.Now()
	go func() {
		// Log-only: when the survivors' Metadata first names a new leader.
		for time.Since(killed) < 20*time.Second {
			var rest []*Node
			for _, n := range nodes {
				if n != lead {
					rest = append(rest, n)
				}
			}
			if l, err := raftLeaderQuiet(rest, topic); err == nil && l != lead.ID {
				t.Logf("survivors name leader %d %v after the kill", l, time.Since(killed).Round(time.Millisecond))
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	produce(200, 201)
	t.Logf("leader %d killed; first acks=all produce acknowledged %v later", lead.ID, time.Since(killed).Round(time.Millisecond))
	produce(201, 400)

	var rest []string
	for _, n := range nodes {
		if n != lead {
			rest = append(rest, n.KafkaAddr)
		}
	}
	cons := franzClient(t, rest[0], kgo.SeedBrokers(rest...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]int64{}
	for len(seen) < len(acked) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d acked records: %v", len(seen), len(acked), ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			k := string(r.Key)
			if prev, dup := seen[k]; dup {
				t.Errorf("record %s read at offsets %d and %d", k, prev, r.Offset)
			}
			seen[k] = r.Offset
			if want, ok := acked[k]; !ok || want != r.Offset || string(r.Value) != "v-"+k {
				t.Errorf("record %s=%s at offset %d, acked at %d (%v)", k, r.Value, r.Offset, want, ok)
			}
		})
	}

	// The killed node comes back from its disk and catches up.
	lead.Start()
	retry.Run(t, 30*time.Second, func() error {
		_, err := raftLeader(t, nodes, topic, 1)
		return err
	})
}

// raftLeaderQuiet is the leader the first node's Metadata names for
// partition 0 of topic, without failing the test.
func raftLeaderQuiet(nodes []*Node, topic string) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].KafkaAddr))
	if err != nil {
		return -1, err
	}
	defer cl.Close()
	m, err := kadm.NewClient(cl).Metadata(context.Background(), topic)
	if err != nil {
		return -1, err
	}
	p, ok := m.Topics[topic].Partitions[0]
	if !ok || p.Leader < 0 {
		return -1, fmt.Errorf("no leader")
	}
	return int(p.Leader), nil
}
