package node

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node/group"
)

// TestKIP848MembersSurviveRestart: a KIP-848 group is stored in
// __consumer_offsets, so after the node restarts on the same data dir and
// port the group is a consumer group at once, and its members heartbeat on
// with the member ids and epochs they had: none is told UNKNOWN_MEMBER_ID,
// none rejoins, and every record is read exactly once across the restart.
func TestKIP848MembersSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, kip848Config(t, dir))
	adm := newAdmin(t, n)
	const topic, group, parts = "kip848r", "g848r", 6
	createTopic(t, adm, topic, parts, nil)
	produceTo(t, n, topic, parts, 30, 0)

	a := startMember848(t, n, group, topic)
	b := startMember848(t, n, group, topic)
	before := waitAssigned(t, adm, group, parts, 2)
	waitHistory(t, parts*30, a, b)
	for _, m := range []*member848{a, b} {
		if err := m.cl.CommitUncommittedOffsets(testCtx(t)); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	want := memberEpochs(before)

	// A raw member of another group, to see its heartbeat answered
	// directly: joined at epoch 1 just before the restart, and heartbeat
	// first thing after it. It sends nothing in between, so its session
	// (2 s) must span only the stop and, from the load on (which gives
	// every member a whole session), its next heartbeat: joined before
	// the franz-go members, as it once was, its silence also spanned their
	// joins and reads, which a loaded machine stretches past 2 s, and the
	// coordinator rightly expired it before the restart.
	raw := newClient(t, n)
	join := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	join.Group, join.MemberID, join.RebalanceTimeoutMillis = "g848raw", "raw-member", 60000
	join.SubscribedTopicNames = []string{topic}
	jr, err := join.RequestWith(testCtx(t), raw)
	if err != nil || jr.ErrorCode != 0 || jr.MemberEpoch != 1 {
		t.Fatalf("raw join: %v %+v", err, jr)
	}

	addr := n.KafkaAddr()
	stopNode(t, n)
	cfg := kip848Config(t, dir)
	cfg.KafkaAddr = addr
	n = startNode(t, cfg)
	adm = newAdmin(t, n)

	// The raw member heartbeats at its old epoch and stays.
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch = "g848raw", "raw-member", 1
	var hr *kmsg.ConsumerGroupHeartbeatResponse
	retry.Run(t, 20*time.Second, func() error {
		hr, err = hb.RequestWith(testCtx(t), newClient(t, n))
		if err != nil {
			return err
		}
		if hr.ErrorCode == kerr.CoordinatorLoadInProgress.Code || hr.ErrorCode == kerr.NotCoordinator.Code {
			return kerr.ErrorForCode(hr.ErrorCode)
		}
		return nil
	})
	if hr.ErrorCode != 0 || hr.MemberEpoch != 1 {
		t.Fatalf("raw member after restart: %s %+v", kerr.ErrorForCode(hr.ErrorCode), hr)
	}

	// The group is a consumer group with its members (old code: a
	// classic Empty group holding only offsets).
	retry.Run(t, 20*time.Second, func() error {
		listed, err := adm.ListGroups(testCtx(t))
		if err != nil {
			return err
		}
		if g, ok := listed[group]; !ok || g.GroupType != "consumer" {
			return fmt.Errorf("after restart ListGroups shows %+v", listed)
		}
		return nil
	})

	// The franz-go members go on with the same ids and epochs and read
	// what is produced after the restart, once.
	produceTo(t, n, topic, parts, 10, 30)
	waitHistory(t, parts*40, a, b)
	after := waitAssigned(t, adm, group, parts, 2)
	if got := memberEpochs(after); !maps.Equal(got, want) {
		t.Fatalf("members after restart %v, before %v", got, want)
	}
	if after.Epoch != before.Epoch {
		t.Fatalf("group epoch %d after restart, %d before", after.Epoch, before.Epoch)
	}
}

// memberEpochs maps each described member's id to its epoch.
func memberEpochs(d kadm.DescribedConsumerGroup) map[string]int32 {
	out := map[string]int32{}
	for _, m := range d.Members {
		out[m.MemberID] = m.MemberEpoch
	}
	return out
}

// TestKIP848GroupCompacted: members joining and leaving a KIP-848 group
// write and tombstone their records; the cleaner keeps only each key's
// newest record, and the node restarted on the cleaned log knows exactly
// the member that stayed, at its epoch.
func TestKIP848GroupCompacted(t *testing.T) {
	churn := 300
	if testing.Short() {
		churn = 100
	}
	dir := t.TempDir()
	cfg := kip848Config(t, dir)
	cfg.Groups.OffsetsTopicPartitions = 1
	cfg.Groups.ConsumerSessionTimeout = time.Minute // the keeper stays silent through the churn
	n := startNode(t, cfg)
	adm := newAdmin(t, n)
	const topic, gid = "c848", "gc848"
	createTopic(t, adm, topic, 4, nil)
	raw := newClient(t, n)
	var topicID [16]byte
	hb := func(member string, epoch int32, owned []int32) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = gid, member, epoch
		if epoch == 0 {
			req.RebalanceTimeoutMillis = 60000
			req.SubscribedTopicNames = []string{topic}
		}
		if owned != nil {
			rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			rt.TopicID, rt.Partitions = topicID, owned
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{rt}
		}
		resp, err := req.RequestWith(testCtx(t), raw)
		if err != nil {
			t.Fatalf("heartbeat %s@%d: %v", member, epoch, err)
		}
		return resp
	}
	keeper := hb("keeper", 0, nil)
	if keeper.ErrorCode != 0 || keeper.MemberEpoch != 1 || keeper.Assignment == nil || len(keeper.Assignment.Topics) != 1 {
		t.Fatalf("keeper join: %+v", keeper)
	}
	topicID = keeper.Assignment.Topics[0].TopicID
	lp := smallSegments(t, n, group.TopicName, 0)
	for i := range churn {
		id := fmt.Sprintf("churn-%d", i)
		if r := hb(id, 0, nil); r.ErrorCode != 0 {
			t.Fatalf("%s join: %s", id, kerr.ErrorForCode(r.ErrorCode))
		}
		if r := hb(id, -1, nil); r.ErrorCode != 0 {
			t.Fatalf("%s leave: %s", id, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	// The keeper reconciles to the group's epoch, all partitions its.
	var k *kmsg.ConsumerGroupHeartbeatResponse
	owned := []int32{0, 1, 2, 3}
	for epoch := keeper.MemberEpoch; ; {
		k = hb("keeper", epoch, owned)
		if k.ErrorCode != 0 {
			t.Fatalf("keeper heartbeat at %d: %s", epoch, kerr.ErrorForCode(k.ErrorCode))
		}
		if k.MemberEpoch == epoch {
			break
		}
		epoch = k.MemberEpoch
	}
	if k.MemberEpoch < int32(2*churn) {
		t.Fatalf("keeper at epoch %d after %d joins and leaves", k.MemberEpoch, churn)
	}
	if err := lp.Replica.Flush(); err != nil {
		t.Fatal(err)
	}
	before := lp.Replica.Size()
	if cleaned := n.cleaner.CleanLogs(); cleaned < 1 {
		t.Fatalf("the cleaner pass cleaned %d logs", cleaned)
	}
	after := lp.Replica.Size()
	t.Logf("%s-0: %d bytes -> %d bytes", group.TopicName, before, after)
	if after*3 > before {
		t.Fatalf("%s-0 shrank from %d to only %d bytes", group.TopicName, before, after)
	}

	addr := n.KafkaAddr()
	stopNode(t, n)
	cfg = kip848Config(t, dir)
	cfg.Groups.OffsetsTopicPartitions = 1
	cfg.KafkaAddr = addr
	n = startNode(t, cfg)
	raw = newClient(t, n)
	var again *kmsg.ConsumerGroupHeartbeatResponse
	retry.Run(t, 20*time.Second, func() error {
		again = hb("keeper", k.MemberEpoch, nil)
		if again.ErrorCode == kerr.CoordinatorLoadInProgress.Code || again.ErrorCode == kerr.NotCoordinator.Code {
			return kerr.ErrorForCode(again.ErrorCode)
		}
		return nil
	})
	if again.ErrorCode != 0 || again.MemberEpoch != k.MemberEpoch {
		t.Fatalf("keeper after restart on the cleaned log: %s %+v, want epoch %d", kerr.ErrorForCode(again.ErrorCode), again, k.MemberEpoch)
	}
	if r := hb("churn-7", 1, nil); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("a member that left is back after restart: %+v", r)
	}
	d := describe848(t, newAdmin(t, n), gid)
	if len(d.Members) != 1 || d.Members[0].MemberID != "keeper" || len(d.Members[0].Assignment[topic]) != 4 || d.Epoch != k.MemberEpoch {
		t.Fatalf("described after restart %+v", d)
	}
}
