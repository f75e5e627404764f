package group

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topics848 is a mutable topic table for the consumer protocol's lookups.
type topics848 map[string]int32

func topicID848(name string) [16]byte {
	var id [16]byte
	copy(id[:], name)
	return id
}

func newHarness848(t *testing.T, topics topics848) *harness {
	return newHarness(t, func(c *Config) {
		c.Topic = func(name string) ([16]byte, int32, bool) {
			n, ok := topics[name]
			return topicID848(name), n, ok
		}
		c.TopicName = func(id [16]byte) (string, bool) {
			for name := range topics {
				if topicID848(name) == id {
					return name, true
				}
			}
			return "", false
		}
	})
}

// cgh sends one heartbeat; owned nil leaves the field out (unchanged).
func (h *harness) cgh(group, member string, epoch int32, subscribed []string, owned []int32) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, group, member, epoch
	req.SubscribedTopicNames = subscribed
	if epoch == 0 {
		req.RebalanceTimeoutMillis = int32(testRebalance / time.Millisecond)
	}
	if owned != nil {
		tt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		tt.TopicID, tt.Partitions = topicID848("t"), owned
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{tt}
		if len(owned) == 0 {
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
	}
	return h.c.ConsumerGroupHeartbeat(Client{ID: "c", Host: "/127.0.0.1"}, req)
}

func partitionsOf(resp *kmsg.ConsumerGroupHeartbeatResponse) []int32 {
	if resp.Assignment == nil {
		return nil
	}
	var out []int32
	for _, t := range resp.Assignment.Topics {
		out = append(out, t.Partitions...)
	}
	slices.Sort(out)
	if out == nil {
		out = []int32{}
	}
	return out
}

// TestConsumerRevokeBeforeAssign: a partition moves from its owner to a
// new member only after the owner's heartbeat no longer lists it, and the
// owner's epoch advances only then.
func TestConsumerRevokeBeforeAssign(t *testing.T) {
	h := newHarness848(t, topics848{"t": 4})
	sub := []string{"t"}
	a := h.cgh("g", "a", 0, sub, []int32{})
	if a.ErrorCode != 0 || !slices.Equal(partitionsOf(a), []int32{0, 1, 2, 3}) {
		t.Fatalf("a joins: %+v", a)
	}
	ea := a.MemberEpoch
	b := h.cgh("g", "b", 0, sub, []int32{})
	if b.ErrorCode != 0 || len(partitionsOf(b)) != 0 || b.MemberEpoch <= ea {
		t.Fatalf("b joins while a holds everything: %+v", b)
	}
	eb := b.MemberEpoch
	a = h.cgh("g", "a", ea, nil, []int32{0, 1, 2, 3})
	kept := partitionsOf(a)
	if a.ErrorCode != 0 || len(kept) != 2 || a.MemberEpoch != ea {
		t.Fatalf("a is told to revoke: %+v", a)
	}
	if b = h.cgh("g", "b", eb, nil, []int32{}); len(partitionsOf(b)) != 0 {
		t.Fatalf("b got %v while a still owns them", partitionsOf(b))
	}
	// A keep-alive without owned partitions changes nothing.
	if a = h.cgh("g", "a", ea, nil, nil); a.ErrorCode != 0 || a.MemberEpoch != ea {
		t.Fatalf("a keep-alive: %+v", a)
	}
	a = h.cgh("g", "a", ea, nil, kept)
	if a.ErrorCode != 0 || a.MemberEpoch != eb {
		t.Fatalf("a acknowledged the revocation: %+v", a)
	}
	b = h.cgh("g", "b", eb, nil, []int32{})
	got := partitionsOf(b)
	if len(got) != 2 || slices.ContainsFunc(got, func(p int32) bool { return slices.Contains(kept, p) }) {
		t.Fatalf("b got %v, a kept %v", got, kept)
	}

	// A wrong epoch is fenced, an unknown member is unknown.
	if r := h.cgh("g", "b", eb+5, nil, got); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("wrong epoch: %+v", r)
	}
	if r := h.cgh("g", "zz", 3, nil, nil); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member: %+v", r)
	}

	// Commits and fetches check the member epoch.
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version, oc.Group, oc.MemberID, oc.Generation = 9, "g", "a", eb-1
	ot := kmsg.NewOffsetCommitRequestTopic()
	ot.Topic = "t"
	ot.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: kept[0], Offset: 7, LeaderEpoch: -1}}
	oc.Topics = append(oc.Topics, ot)
	if r := h.c.OffsetCommit(oc); r.Topics[0].Partitions[0].ErrorCode != kerr.StaleMemberEpoch.Code {
		t.Fatalf("stale commit: %+v", r)
	}
	oc.Generation = eb
	if r := h.c.OffsetCommit(oc); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %+v", r)
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Version = 9
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group, rg.MemberID, rg.MemberEpoch = "g", kmsg.StringPtr("a"), eb-1
	of.Groups = append(of.Groups, rg)
	if r := h.c.OffsetFetch(of); r.Groups[0].ErrorCode != kerr.StaleMemberEpoch.Code {
		t.Fatalf("stale fetch: %+v", r.Groups[0])
	}

	// b goes silent: after the session timeout a gets everything back.
	h.clock.Advance(DefaultConfig().ConsumerSessionTimeout / 2)
	a = h.cgh("g", "a", eb, nil, kept)
	h.clock.Advance(DefaultConfig().ConsumerSessionTimeout/2 + time.Millisecond)
	a = h.cgh("g", "a", eb, nil, kept)
	if a.ErrorCode != 0 || !slices.Equal(partitionsOf(a), []int32{0, 1, 2, 3}) || a.MemberEpoch <= eb {
		t.Fatalf("after b's session ended a has %+v", a)
	}
	if r := h.cgh("g", "b", eb, nil, got); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("expired member heartbeats: %+v", r)
	}

	// Offsets of a topic a member subscribes to cannot be deleted.
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	odt := kmsg.NewOffsetDeleteRequestTopic()
	odt.Topic, odt.Partitions = "t", []kmsg.OffsetDeleteRequestTopicPartition{{Partition: kept[0]}}
	od.Topics = append(od.Topics, odt)
	if r := h.c.OffsetDelete(od); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code {
		t.Fatalf("offset delete of a subscribed topic: %+v", r)
	}

	// A classic member cannot join; ListGroups calls the group consumer.
	if r := h.c.JoinGroup(t.Context(), Client{}, joinReq("g", "", 4, "range")); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("classic join: %d", r.ErrorCode)
	}
	lr := h.c.ListGroups(kmsg.NewPtrListGroupsRequest())
	if len(lr.Groups) != 1 || lr.Groups[0].GroupType != "consumer" || lr.Groups[0].ProtocolType != "consumer" {
		t.Fatalf("listed %+v", lr.Groups)
	}
}

// TestConsumerRangeAndGrowth: the range assignor gives contiguous ranges,
// and a topic that gains partitions advances the group epoch and assigns
// them.
func TestConsumerRangeAndGrowth(t *testing.T) {
	topics := topics848{"t": 4}
	h := newHarness848(t, topics)
	join := func(m string) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.RebalanceTimeoutMillis = 1, "g", m, 1000
		req.SubscribedTopicNames, req.ServerAssignor = []string{"t"}, kmsg.StringPtr("range")
		return h.c.ConsumerGroupHeartbeat(Client{}, req)
	}
	a := join("a")
	b := join("b")
	d := h.c.ConsumerGroupDescribe(&kmsg.ConsumerGroupDescribeRequest{Version: 1, Groups: []string{"g"}}).Groups[0]
	if d.ErrorCode != 0 || d.AssignorName != "range" || len(d.Members) != 2 {
		t.Fatalf("described %+v", d)
	}
	if ta := d.Members[0].TargetAssignment.TopicPartitions; len(ta) != 1 || !slices.Equal(ta[0].Partitions, []int32{0, 1}) {
		t.Fatalf("a's target %+v", ta)
	}
	if ta := d.Members[1].TargetAssignment.TopicPartitions; len(ta) != 1 || !slices.Equal(ta[0].Partitions, []int32{2, 3}) {
		t.Fatalf("b's target %+v", ta)
	}
	a = h.cgh("g", "a", a.MemberEpoch, nil, []int32{0, 1, 2, 3})
	a = h.cgh("g", "a", a.MemberEpoch, nil, []int32{0, 1})
	b = h.cgh("g", "b", b.MemberEpoch, nil, []int32{})
	if !slices.Equal(partitionsOf(a), []int32{0, 1}) || !slices.Equal(partitionsOf(b), []int32{2, 3}) {
		t.Fatalf("a %v b %v", partitionsOf(a), partitionsOf(b))
	}
	epoch := d.Epoch

	topics["t"] = 6
	a = h.cgh("g", "a", a.MemberEpoch, nil, []int32{0, 1})
	a = h.cgh("g", "a", a.MemberEpoch, nil, []int32{0, 1})
	b = h.cgh("g", "b", b.MemberEpoch, nil, []int32{2, 3})
	b = h.cgh("g", "b", b.MemberEpoch, nil, partitionsOf(b))
	a = h.cgh("g", "a", a.MemberEpoch, nil, partitionsOf(a))
	if !slices.Equal(partitionsOf(a), []int32{0, 1, 2}) || !slices.Equal(partitionsOf(b), []int32{3, 4, 5}) || a.MemberEpoch <= epoch {
		t.Fatalf("after growth a %v (epoch %d) b %v", partitionsOf(a), a.MemberEpoch, partitionsOf(b))
	}
	if d := h.c.ConsumerGroupDescribe(&kmsg.ConsumerGroupDescribeRequest{Groups: []string{"g"}}).Groups[0]; d.State != "Stable" || d.Epoch != a.MemberEpoch {
		t.Fatalf("described after growth %+v", d)
	}
}
