package node

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetForLeaderEpoch asks n for where epoch ends on partition 0 of topic,
// with current as CurrentLeaderEpoch.
func offsetForLeaderEpoch(t *testing.T, cl *kgo.Client, topic string, epoch, current int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.LeaderEpoch, rp.CurrentLeaderEpoch = epoch, current
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := rawRequest[*kmsg.OffsetForLeaderEpochResponse](t, cl, req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("OffsetForLeaderEpoch: %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// fetchWithEpoch fetches partition 0 of topic from offset 0 with current as
// CurrentLeaderEpoch and returns the partition's error code.
func fetchWithEpoch(t *testing.T, n *Node, cl *kgo.Client, topic string, current int32) int16 {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes, req.SessionEpoch = 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	spec, _ := n.catalog.Topic(topic)
	rt.TopicID = spec.ID // kgo sends v13+, by id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, current
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := rawRequest[*kmsg.FetchResponse](t, cl, req)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// listLatestWithEpoch lists partition 0's latest offset with current as
// CurrentLeaderEpoch.
func listLatestWithEpoch(t *testing.T, cl *kgo.Client, topic string, current int32) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = -1, current
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return rawRequest[*kmsg.ListOffsetsResponse](t, cl, req).Topics[0].Partitions[0]
}

// TestOffsetForLeaderEpochAcrossRestart (KIP-320): a restart of the leader
// starts epoch 1 at offset 2, so epoch 0 ends at 2 and epoch 1 at the log
// end; an epoch not yet seen is UNDEFINED; Fetch, ListOffsets and
// OffsetForLeaderEpoch fence a client's older CurrentLeaderEpoch and refuse
// a newer one.
func TestOffsetForLeaderEpochAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, testConfig(t, dir))
	createTopic(t, newAdmin(t, n), "kip320", 1, nil)
	cl := newClient(t, n)
	for _, v := range []string{"a", "b"} {
		if p := produceRaw(t, cl, "kip320", rawBatch(-1, -1, -1, time.Now().UnixMilli(), v)); p.ErrorCode != 0 {
			t.Fatalf("produce: error %d", p.ErrorCode)
		}
	}
	if got := offsetForLeaderEpoch(t, cl, "kip320", 0, 0); got.ErrorCode != 0 || got.LeaderEpoch != 0 || got.EndOffset != 2 {
		t.Fatalf("epoch 0 before restart: %+v, want epoch 0 ending at 2", got)
	}
	stopNode(t, n)

	n = startNode(t, testConfig(t, dir))
	cl = newClient(t, n)
	// Before anything is written in epoch 1, it already starts at the log
	// end, which ends epoch 0.
	if got := offsetForLeaderEpoch(t, cl, "kip320", 0, 1); got.ErrorCode != 0 || got.LeaderEpoch != 0 || got.EndOffset != 2 {
		t.Fatalf("epoch 0 after restart, nothing written yet: %+v, want epoch 0 ending at 2", got)
	}
	if p := produceRaw(t, cl, "kip320", rawBatch(-1, -1, -1, time.Now().UnixMilli(), "c")); p.ErrorCode != 0 || p.BaseOffset != 2 {
		t.Fatalf("produce after restart: error %d offset %d", p.ErrorCode, p.BaseOffset)
	}
	for _, tc := range []struct {
		epoch, current int32
		code           int16
		wantEpoch      int32
		wantEnd        int64
	}{
		{epoch: 0, current: 1, wantEpoch: 0, wantEnd: 2},  // ends where epoch 1 starts
		{epoch: 1, current: 1, wantEpoch: 1, wantEnd: 3},  // the current epoch: the log end
		{epoch: 0, current: -1, wantEpoch: 0, wantEnd: 2}, // no CurrentLeaderEpoch: not checked
		{epoch: 2, current: 1, wantEpoch: -1, wantEnd: -1},
		{epoch: -1, current: 1, wantEpoch: -1, wantEnd: -1},
		{epoch: 0, current: 0, code: kerr.FencedLeaderEpoch.Code, wantEpoch: -1, wantEnd: -1},
		{epoch: 0, current: 2, code: kerr.UnknownLeaderEpoch.Code, wantEpoch: -1, wantEnd: -1},
	} {
		got := offsetForLeaderEpoch(t, cl, "kip320", tc.epoch, tc.current)
		if got.ErrorCode != tc.code || got.LeaderEpoch != tc.wantEpoch || got.EndOffset != tc.wantEnd {
			t.Errorf("OffsetForLeaderEpoch epoch %d current %d: error %d epoch %d end %d; want error %d epoch %d end %d",
				tc.epoch, tc.current, got.ErrorCode, got.LeaderEpoch, got.EndOffset, tc.code, tc.wantEpoch, tc.wantEnd)
		}
	}

	for current, want := range map[int32]int16{-1: 0, 1: 0, 0: kerr.FencedLeaderEpoch.Code, 2: kerr.UnknownLeaderEpoch.Code} {
		if got := fetchWithEpoch(t, n, cl, "kip320", current); got != want {
			t.Errorf("Fetch with CurrentLeaderEpoch %d: error %d, want %d", current, got, want)
		}
		if got := listLatestWithEpoch(t, cl, "kip320", current); got.ErrorCode != want || (want == 0 && got.Offset != 3) {
			t.Errorf("ListOffsets with CurrentLeaderEpoch %d: error %d offset %d, want error %d", current, got.ErrorCode, got.Offset, want)
		}
	}
}
