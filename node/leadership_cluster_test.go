package node

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
)

// TestLeadershipReachesEveryNode: a partition pinned on node 3 alone, whose
// leader epoch a restart of node 3 moves to 1, is reported by nodes 1 and
// 2, which do not host it, with node 3's epoch, ISR and offline replicas
// in Metadata and DescribeTopicPartitions, and with that epoch in the
// KIP-951 CurrentLeader of a NOT_LEADER_OR_FOLLOWER Produce v10+ and Fetch
// v16+. The claims travel by the leadership tag and a pull (no sleep: the
// table converges, polled with a deadline).
func TestLeadershipReachesEveryNode(t *testing.T) {
	nodes := startCluster(t, 3)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := assignmentRequest(-1, -1, map[int32][]int32{0: {3}}, 0)
	rt.Topic = "on-three"
	req.Topics = append(req.Topics, rt)
	if resp := rawRequest[*kmsg.CreateTopicsResponse](t, newClient(t, nodes[0]), req); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: error %d", resp.Topics[0].ErrorCode)
	}
	spec := waitTopic(t, nodes, "on-three")

	// A restart of node 3 starts epoch 1 (its log's epoch 0 plus one).
	cl := newClient(t, nodes[2])
	if p := produceRaw(t, cl, "on-three", rawBatch(-1, -1, -1, time.Now().UnixMilli(), "x")); p.ErrorCode != 0 {
		t.Fatalf("produce: error %d", p.ErrorCode)
	}
	cfg := nodes[2].cfg
	stopNode(t, nodes[2])
	nodes[2] = startNode(t, cfg)
	waitMembers(t, nodes, 3)
	const want = int32(1)
	if ep := nodes[2].parts.Get("on-three", 0).Replica.LeaderEpoch(); ep != want {
		t.Fatalf("leader epoch after restart %d, want %d", ep, want)
	}

	restarted := time.Now()
	for _, n := range nodes[:2] {
		if n.parts.Get("on-three", 0) != nil {
			t.Fatalf("node %d hosts the partition", n.NodeID())
		}
		retry.Run(t, 20*time.Second, func() error {
			m := metadataOf(t, n, "on-three").Topics[0].Partitions[0]
			if m.ErrorCode != 0 || m.Leader != 3 || m.LeaderEpoch != want || !slices.Equal(m.ISR, []int32{3}) || len(m.OfflineReplicas) != 0 {
				return fmt.Errorf("node %d metadata: error %d leader %d epoch %d ISR %v offline %v; want leader 3 epoch %d",
					n.NodeID(), m.ErrorCode, m.Leader, m.LeaderEpoch, m.ISR, m.OfflineReplicas, want)
			}
			return nil
		})
		t.Logf("MEASURED: node %d reports node 3's new epoch %v after node 3 was admitted", n.NodeID(), time.Since(restarted).Round(time.Millisecond))
		dreq := kmsg.NewPtrDescribeTopicPartitionsRequest()
		dt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		dt.Topic = "on-three"
		dreq.Topics = append(dreq.Topics, dt)
		d := rawRequest[*kmsg.DescribeTopicPartitionsResponse](t, newClient(t, n), dreq).Topics[0].Partitions[0]
		if d.LeaderID != 3 || d.LeaderEpoch != want || !slices.Equal(d.ISR, []int32{3}) {
			t.Fatalf("node %d DescribeTopicPartitions: leader %d epoch %d ISR %v", n.NodeID(), d.LeaderID, d.LeaderEpoch, d.ISR)
		}

		vc := dialVersions(t, n.KafkaAddr())
		p := kmsg.NewPtrProduceRequest()
		p.Version, p.Acks, p.TimeoutMillis = 12, -1, 5000
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = "on-three"
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = rawBatch(-1, -1, -1, time.Now().UnixMilli(), "x")
		pt.Partitions = append(pt.Partitions, pp)
		p.Topics = append(p.Topics, pt)
		sp := roundTrip[*kmsg.ProduceResponse](t, vc, p).Topics[0].Partitions[0]
		if sp.ErrorCode != kerr.NotLeaderForPartition.Code || sp.CurrentLeader.LeaderID != 3 || sp.CurrentLeader.LeaderEpoch != want {
			t.Fatalf("node %d Produce v12: error %d current leader %+v", n.NodeID(), sp.ErrorCode, sp.CurrentLeader)
		}
		f := kmsg.NewPtrFetchRequest()
		f.Version, f.MaxBytes, f.SessionEpoch = 17, 1<<20, -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = "on-three", spec.ID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		f.Topics = append(f.Topics, ft)
		fr := roundTrip[*kmsg.FetchResponse](t, vc, f).Topics[0].Partitions[0]
		if fr.ErrorCode != kerr.NotLeaderForPartition.Code || fr.CurrentLeader.LeaderID != 3 || fr.CurrentLeader.LeaderEpoch != want {
			t.Fatalf("node %d Fetch v17: error %d current leader %+v", n.NodeID(), fr.ErrorCode, fr.CurrentLeader)
		}
	}

	// Node 3 leaves: its claims go at once, and the others answer from
	// their cluster view again (no leader while the only replica is away).
	stopNode(t, nodes[2])
	for _, n := range nodes[:2] {
		retry.Run(t, 20*time.Second, func() error {
			m := metadataOf(t, n, "on-three").Topics[0].Partitions[0]
			if m.Leader != -1 || m.LeaderEpoch != -1 || !slices.Equal(m.OfflineReplicas, []int32{3}) {
				return fmt.Errorf("node %d metadata after node 3 left: leader %d epoch %d offline %v", n.NodeID(), m.Leader, m.LeaderEpoch, m.OfflineReplicas)
			}
			return nil
		})
	}
}
