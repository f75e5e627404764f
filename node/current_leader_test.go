package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/cluster"
)

// TestNotLeaderNamesCurrentLeader: Produce v10+ and Fetch v16+ sent to a
// broker that does not lead the partition name the leader and its endpoint
// (KIP-951); earlier versions carry neither. The partition is pinned on
// node 2 by a manual assignment and asked of node 1.
func TestNotLeaderNamesCurrentLeader(t *testing.T) {
	nodes := startCluster(t, 2)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := assignmentRequest(-1, -1, map[int32][]int32{0: {2}}, 0)
	rt.Topic = "on-two"
	req.Topics = append(req.Topics, rt)
	if resp := rawRequest[*kmsg.CreateTopicsResponse](t, newClient(t, nodes[0]), req); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: error %d", resp.Topics[0].ErrorCode)
	}
	spec := waitTopic(t, nodes, "on-two")
	vc := dialVersions(t, nodes[0].KafkaAddr())
	host, port, _ := cluster.SplitHostPort(nodes[1].KafkaAddr())

	for _, v := range []int16{9, 10, 12} {
		p := kmsg.NewPtrProduceRequest()
		p.Version, p.Acks, p.TimeoutMillis = v, -1, 5000
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = "on-two"
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = rawBatch(-1, -1, -1, time.Now().UnixMilli(), "x")
		pt.Partitions = append(pt.Partitions, pp)
		p.Topics = append(p.Topics, pt)
		resp := roundTrip[*kmsg.ProduceResponse](t, vc, p)
		sp := resp.Topics[0].Partitions[0]
		if sp.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("Produce v%d: error %d", v, sp.ErrorCode)
		}
		checkLeaderHint(t, fmt.Sprintf("Produce v%d", v), v >= 10, sp.CurrentLeader.LeaderID, len(resp.Brokers), func() (int32, string, int32) {
			return resp.Brokers[0].NodeID, resp.Brokers[0].Host, resp.Brokers[0].Port
		}, host, port)
	}

	for _, v := range []int16{12, 15, 16, 17} {
		f := kmsg.NewPtrFetchRequest()
		f.Version, f.MaxBytes, f.SessionEpoch = v, 1<<20, -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = "on-two", spec.ID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		f.Topics = append(f.Topics, ft)
		resp := roundTrip[*kmsg.FetchResponse](t, vc, f)
		sp := resp.Topics[0].Partitions[0]
		if sp.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("Fetch v%d: error %d", v, sp.ErrorCode)
		}
		checkLeaderHint(t, fmt.Sprintf("Fetch v%d", v), v >= 16, sp.CurrentLeader.LeaderID, len(resp.Brokers), func() (int32, string, int32) {
			return resp.Brokers[0].NodeID, resp.Brokers[0].Host, resp.Brokers[0].Port
		}, host, port)
	}

	// An id no topic has: UNKNOWN_TOPIC_ID on its partitions.
	f := kmsg.NewPtrFetchRequest()
	f.Version, f.MaxBytes, f.SessionEpoch = 13, 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = [16]byte{7, 7}
	ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
	f.Topics = append(f.Topics, ft)
	resp := roundTrip[*kmsg.FetchResponse](t, vc, f)
	if resp.Topics[0].TopicID != ft.TopicID || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("Fetch v13 of an unknown id: %+v", resp.Topics[0])
	}
}

func checkLeaderHint(t *testing.T, what string, want bool, leader int32, brokers int, first func() (int32, string, int32), host string, port int32) {
	t.Helper()
	if !want {
		if leader != -1 || brokers != 0 {
			t.Fatalf("%s: current leader %d and %d endpoints, want none", what, leader, brokers)
		}
		return
	}
	if leader != 2 || brokers != 1 {
		t.Fatalf("%s: current leader %d and %d endpoints, want leader 2 and its endpoint", what, leader, brokers)
	}
	if id, h, p := first(); id != 2 || h != host || p != port {
		t.Fatalf("%s: endpoint %d %s:%d, want 2 %s:%d", what, id, h, p, host, port)
	}
}
