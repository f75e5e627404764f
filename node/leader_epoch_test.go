package node

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/group"
	"github.com/spool-log/spool/partition"
)

// TestLeaderEpochFromReplica: Metadata, DescribeTopicPartitions, ListOffsets
// and the batches on disk carry the partition replica's leader epoch, which
// a restart of the leading node moves up (a new leadership), not a
// hard-coded 0.
func TestLeaderEpochFromReplica(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, testConfig(t, dir))
	createTopic(t, newAdmin(t, n), "ep", 1, nil)

	check := func(n *Node, want int32) {
		t.Helper()
		cl := newClient(t, n)
		mreq := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("ep")
		mreq.Topics = append(mreq.Topics, mt)
		mresp := rawRequest[*kmsg.MetadataResponse](t, cl, mreq)
		if len(mresp.Topics) != 1 || len(mresp.Topics[0].Partitions) != 1 {
			t.Fatalf("metadata: %+v", mresp.Topics)
		}
		mp := mresp.Topics[0].Partitions[0]
		self := n.cfg.NodeID
		if mp.ErrorCode != 0 || mp.Leader != self || mp.LeaderEpoch != want ||
			!slices.Equal(mp.ISR, []int32{self}) || len(mp.OfflineReplicas) != 0 {
			t.Fatalf("metadata partition: error %d, leader %d, epoch %d, ISR %v, offline %v; want leader %d, epoch %d",
				mp.ErrorCode, mp.Leader, mp.LeaderEpoch, mp.ISR, mp.OfflineReplicas, self, want)
		}
		dreq := kmsg.NewPtrDescribeTopicPartitionsRequest()
		dt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		dt.Topic = "ep"
		dreq.Topics = append(dreq.Topics, dt)
		dresp := rawRequest[*kmsg.DescribeTopicPartitionsResponse](t, cl, dreq)
		if len(dresp.Topics) != 1 || len(dresp.Topics[0].Partitions) != 1 {
			t.Fatalf("describe topic partitions: %+v", dresp.Topics)
		}
		if dp := dresp.Topics[0].Partitions[0]; dp.LeaderID != self || dp.LeaderEpoch != want || !slices.Equal(dp.ISR, []int32{self}) {
			t.Fatalf("describe topic partitions: leader %d, epoch %d, ISR %v; want epoch %d", dp.LeaderID, dp.LeaderEpoch, dp.ISR, want)
		}
		lreq := kmsg.NewPtrListOffsetsRequest()
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "ep"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp = -1
		lt.Partitions = append(lt.Partitions, lp)
		lreq.Topics = append(lreq.Topics, lt)
		lresp := rawRequest[*kmsg.ListOffsetsResponse](t, cl, lreq)
		if sp := lresp.Topics[0].Partitions[0]; sp.ErrorCode != 0 || sp.LeaderEpoch != want {
			t.Fatalf("list offsets: error %d, epoch %d, want %d", sp.ErrorCode, sp.LeaderEpoch, want)
		}
		if p := produceRaw(t, cl, "ep", rawBatch(-1, -1, -1, time.Now().UnixMilli(), "x")); p.ErrorCode != 0 {
			t.Fatalf("produce: error %d", p.ErrorCode)
		}
	}
	check(n, 0)
	stopNode(t, n)
	n = startNode(t, testConfig(t, dir))
	check(n, 1)

	recs := consumeAll(t, n, "ep", 2)
	if recs[0].LeaderEpoch != 0 || recs[1].LeaderEpoch != 1 {
		t.Fatalf("batches' leader epochs %d, %d; want 0, 1", recs[0].LeaderEpoch, recs[1].LeaderEpoch)
	}
}

// TestOffsetCommitsThroughReplica: the group coordinator's commits go
// through the __consumer_offsets replica's produce path, so they carry its
// leader epoch (they were appended with none, -1, on their own before) and
// move its high watermark.
func TestOffsetCommitsThroughReplica(t *testing.T) {
	n := startNode(t, groupTestConfig(t, t.TempDir()))
	commitOne(t, kadm.NewClient(newClient(t, n)))
	found := 0
	for _, p := range n.parts.All() {
		if p.Topic != group.TopicName || p.Replica.HighWatermark() == 0 {
			continue
		}
		s, err := p.Replica.Read(0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		hdr := make([]byte, partition.BatchHeaderSize)
		for _, r := range s.Regions {
			for pos := r.Position; pos+partition.BatchHeaderSize <= r.Position+r.Length; {
				if _, err := r.File.ReadAt(hdr, pos); err != nil {
					t.Fatal(err)
				}
				h, err := partition.ParseBatchHeader(hdr)
				if err != nil {
					t.Fatal(err)
				}
				if h.PartitionLeaderEpoch != p.Replica.LeaderEpoch() || h.PartitionLeaderEpoch < 0 {
					t.Fatalf("%s-%d batch at %d: leader epoch %d, replica's %d", p.Topic, p.Index, h.BaseOffset, h.PartitionLeaderEpoch, p.Replica.LeaderEpoch())
				}
				found++
				pos += h.Size()
			}
		}
		s.Release()
	}
	if found == 0 {
		t.Fatalf("no commit batch in any %s replica below its high watermark", group.TopicName)
	}
}
