package integration

// CreatePartitions on a 3-node cluster: the new partitions reach every
// node's catalog by gossip, are placed as a create of the larger count
// would place them (or where an explicit assignment says), and take
// produce and fetch on their leaders. Partition-scoped admin APIs sent to a
// node that does not lead the partition answer NOT_LEADER_OR_FOLLOWER.

import (
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/membership"
)

func TestAdminCreatePartitionsCluster(t *testing.T) {
	nodes := startCluster(t, 3)
	const topic = "grown"
	franzCreateTopic(t, nodes[0].KafkaAddr, topic, 2)
	waitTopicEverywhere(t, nodes, topic)
	_, before := metadata(t, nodes[0], topic)
	old := franzClient(t, nodes[0].KafkaAddr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := int32(0); p < 2; p++ {
		if err := old.ProduceSync(ctxTimeout(t, 20*time.Second), &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprint("old-", p))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// Grow to 6 through node 2: it records the change, gossip spreads it.
	adm := kadm.NewClient(franzClient(t, nodes[1].KafkaAddr))
	resps, err := adm.UpdatePartitions(ctxTimeout(t, 20*time.Second), 6, topic)
	if err != nil || resps[topic].Err != nil {
		t.Fatalf("update partitions to 6: %v %+v", err, resps)
	}
	placed := membership.PlaceTopic(topic, 6, []int32{1, 2, 3}, 1)
	waitPartitions := func(count int, check func(n *Node, p int, pm partitionMeta) error) {
		t.Helper()
		retry.Run(t, 20*time.Second, func() error {
			for _, n := range nodes {
				_, parts := metadata(t, n, topic)
				if len(parts) != count {
					return fmt.Errorf("node %d lists %d partitions, want %d", n.ID, len(parts), count)
				}
				for p, pm := range parts {
					if pm.ErrorCode != 0 || pm.Leader != pm.Replicas[0] {
						return fmt.Errorf("node %d: partition %d %+v", n.ID, p, pm)
					}
					if err := check(n, p, pm); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	waitPartitions(6, func(n *Node, p int, pm partitionMeta) error {
		want := placed[p]
		if p < 2 {
			want = before[p].Replicas // existing partitions stay where they are
		}
		if !slices.Equal(pm.Replicas, want) {
			return fmt.Errorf("node %d: partition %d on %v, want %v", n.ID, p, pm.Replicas, want)
		}
		return nil
	})

	// Produce to every new partition through node 3, read each back
	// through node 1: the leaders opened them.
	pcl := franzClient(t, nodes[2].KafkaAddr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := ctxTimeout(t, 60*time.Second)
	for p := int32(2); p < 6; p++ {
		if err := pcl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprint("new-", p))}).FirstErr(); err != nil {
			t.Fatalf("produce to new partition %d: %v", p, err)
		}
	}
	for p := int32(0); p < 2; p++ { // growing kept the topic, records included
		recs := franzConsume(t, nodes[2].KafkaAddr, topic, p, kgo.NewOffset().AtStart(), 1)
		if string(recs[0].Value) != fmt.Sprint("old-", p) {
			t.Fatalf("partition %d holds %q after growing, want what was produced before", p, recs[0].Value)
		}
	}
	for p := int32(2); p < 6; p++ {
		recs := franzConsume(t, nodes[0].KafkaAddr, topic, p, kgo.NewOffset().AtStart(), 1)
		if string(recs[0].Value) != fmt.Sprint("new-", p) {
			t.Fatalf("partition %d holds %q", p, recs[0].Value)
		}
	}

	// An explicit assignment wins over placement.
	req := kmsg.NewPtrCreatePartitionsRequest()
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, 7
	ra := kmsg.NewCreatePartitionsRequestTopicAssignment()
	ra.Replicas = []int32{3}
	rt.Assignment = append(rt.Assignment, ra)
	req.Topics = append(req.Topics, rt)
	cresp, err := req.RequestWith(ctxTimeout(t, 20*time.Second), franzClient(t, nodes[0].KafkaAddr))
	if err != nil || cresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create partition 6 on broker 3: %v %+v", err, cresp)
	}
	waitPartitions(7, func(n *Node, p int, pm partitionMeta) error {
		if p == 6 && !slices.Equal(pm.Replicas, []int32{3}) {
			return fmt.Errorf("node %d: partition 6 on %v, want [3]", n.ID, pm.Replicas)
		}
		return nil
	})
	// A broker outside the roster is refused.
	ra.Replicas = []int32{9}
	req.Topics[0].Count = 8
	req.Topics[0].Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{ra}
	cresp, err = req.RequestWith(ctxTimeout(t, 20*time.Second), franzClient(t, nodes[0].KafkaAddr))
	if err != nil || cresp.Topics[0].ErrorCode != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("assignment to broker 9: %v %+v, want INVALID_REPLICA_ASSIGNMENT", err, cresp)
	}

	// A config altered through node 1 reaches the partitions other nodes
	// lead: produce there starts refusing what the new limit forbids.
	ares, err := kadm.NewClient(franzClient(t, nodes[0].KafkaAddr)).AlterTopicConfigs(ctxTimeout(t, 10*time.Second),
		[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kmsg.StringPtr("2000")}}, topic)
	if err != nil || ares[0].Err != nil {
		t.Fatalf("alter max.message.bytes: %v %+v", err, ares)
	}
	big := make([]byte, 5000)
	rand.Read(big) // incompressible: the client compresses batches
	for p := int32(0); p < 7; p++ {
		retry.Run(t, 20*time.Second, func() error {
			pcl.ForceMetadataRefresh() // partition 6 came after its last look
			err := pcl.ProduceSync(ctxTimeout(t, 10*time.Second), &kgo.Record{Topic: topic, Partition: p, Value: big}).FirstErr()
			if !errors.Is(err, kerr.MessageTooLarge) {
				return fmt.Errorf("5000 bytes to partition %d under max.message.bytes=2000: %v", p, err)
			}
			return nil
		})
	}

	// Partition-scoped APIs on a node that does not lead the partition.
	leader := placed[2][0]
	other := nodes[leader%3] // a node whose id is not leader
	ocl := franzClient(t, other.KafkaAddr)
	dr := kmsg.NewPtrDeleteRecordsRequest()
	drt := kmsg.NewDeleteRecordsRequestTopic()
	drt.Topic = topic
	drp := kmsg.NewDeleteRecordsRequestTopicPartition()
	drp.Partition, drp.Offset = 2, 1
	drt.Partitions = append(drt.Partitions, drp)
	dr.Topics = append(dr.Topics, drt)
	drResp, err := dr.RequestWith(ctxTimeout(t, 10*time.Second), ocl.Broker(int(other.ID)))
	if err != nil || drResp.Topics[0].Partitions[0].ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("delete records on node %d, leader %d: %v %+v, want NOT_LEADER_OR_FOLLOWER", other.ID, leader, err, drResp)
	}
	dp := kmsg.NewPtrDescribeProducersRequest()
	dpt := kmsg.NewDescribeProducersRequestTopic()
	dpt.Topic, dpt.Partitions = topic, []int32{2}
	dp.Topics = append(dp.Topics, dpt)
	dpResp, err := dp.RequestWith(ctxTimeout(t, 10*time.Second), ocl.Broker(int(other.ID)))
	if err != nil || dpResp.Topics[0].Partitions[0].ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("describe producers on node %d, leader %d: %v %+v, want NOT_LEADER_OR_FOLLOWER", other.ID, leader, err, dpResp)
	}
	// kadm routes both to the leader.
	var os_ kadm.Offsets
	os_.Add(kadm.Offset{Topic: topic, Partition: 2, At: 1})
	dresps, err := kadm.NewClient(ocl).DeleteRecords(ctxTimeout(t, 20*time.Second), os_)
	if r, _ := dresps.Lookup(topic, 2); err != nil || r.Err != nil || r.LowWatermark != 1 {
		t.Fatalf("kadm delete records of partition 2: %v %+v", err, r)
	}
}
