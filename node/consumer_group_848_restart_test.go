package node

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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

	// A raw member of another group, to see its heartbeat answered
	// directly: joined at epoch 1 before the restart.
	raw := newClient(t, n)
	join := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	join.Group, join.MemberID, join.RebalanceTimeoutMillis = "g848raw", "raw-member", 60000
	join.SubscribedTopicNames = []string{topic}
	jr, err := join.RequestWith(testCtx(t), raw)
	if err != nil || jr.ErrorCode != 0 || jr.MemberEpoch != 1 {
		t.Fatalf("raw join: %v %+v", err, jr)
	}

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

	addr := n.KafkaAddr()
	stopNode(t, n)
	cfg := kip848Config(t, dir)
	cfg.KafkaAddr = addr
	n = startNode(t, cfg)
	adm = newAdmin(t, n)

	// Before any member is back the group is a consumer group with its
	// members (old code: a classic Empty group holding only offsets).
	retry(t, 20*time.Second, func() error {
		listed, err := adm.ListGroups(testCtx(t))
		if err != nil {
			return err
		}
		if g, ok := listed[group]; !ok || g.GroupType != "consumer" {
			return fmt.Errorf("after restart ListGroups shows %+v", listed)
		}
		return nil
	})

	// The raw member heartbeats at its old epoch and stays.
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch = "g848raw", "raw-member", 1
	var hr *kmsg.ConsumerGroupHeartbeatResponse
	retry(t, 20*time.Second, func() error {
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
