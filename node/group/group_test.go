package group

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestPartitionForMatchesKafka(t *testing.T) {
	for _, tc := range []struct {
		s    string
		hash int32
	}{
		{"", 0},
		{"hello", 99162322},
		{"é", 233},
		{"\U0001F600", 0xD83D*31 + 0xDE00}, // a surrogate pair, as Java sees it
		{"polygenelubricants", -1 << 31},
	} {
		if got := javaStringHashCode(tc.s); got != tc.hash {
			t.Errorf("javaStringHashCode(%q) = %d, want %d", tc.s, got, tc.hash)
		}
	}
	if p := PartitionFor("polygenelubricants", 50); p != 0 {
		t.Errorf("MinInt32 hash must map to partition 0 (Utils.abs), got %d", p)
	}
	if p := PartitionFor("hello", 50); p != 99162322%50 {
		t.Errorf("PartitionFor(hello) = %d, want %d", p, 99162322%50)
	}
	for _, s := range []string{"a", "group-1", "zzzz", "消费组"} {
		if p := PartitionFor(s, 7); p < 0 || p >= 7 {
			t.Errorf("PartitionFor(%q) = %d out of range", s, p)
		}
	}
}

func TestSingleMemberJoinSyncCommit(t *testing.T) {
	h := newHarness(t)
	id, pj := h.newMember("g")
	r := pj.wait(t)
	wantCode(t, "join", r.ErrorCode, nil)
	if r.Generation != 1 || r.LeaderID != id || r.MemberID != id || len(r.Members) != 1 || *r.Protocol != "range" {
		t.Fatalf("join response %+v", r)
	}
	if string(r.Members[0].ProtocolMetadata) != "meta-range" {
		t.Fatalf("leader must see the member's metadata relayed, got %q", r.Members[0].ProtocolMetadata)
	}
	if st := h.state("g"); st != CompletingRebalance {
		t.Fatalf("state %v after join", st)
	}
	s := h.syncAsync("g", id, 1, map[string]string{id: "mine"}).wait(t)
	wantCode(t, "sync", s.ErrorCode, nil)
	if string(s.MemberAssignment) != "mine" {
		t.Fatalf("assignment %q", s.MemberAssignment)
	}
	if st := h.state("g"); st != Stable {
		t.Fatalf("state %v after sync", st)
	}
	wantCode(t, "heartbeat", h.heartbeat("g", id, 1), nil)
	wantCode(t, "commit", commitCode(t, h.commit("g", id, 1, "t", map[int32]int64{0: 10, 1: 20})), nil)
	if got := h.fetch("g", "t", 0, 1, 2); got[0] != 10 || got[1] != 20 || got[2] != -1 {
		t.Fatalf("fetched %v", got)
	}

	d := h.c.DescribeGroups(&kmsg.DescribeGroupsRequest{Version: 5, Groups: []string{"g"}})
	dg := d.Groups[0]
	if dg.State != "Stable" || dg.Protocol != "range" || len(dg.Members) != 1 || string(dg.Members[0].MemberAssignment) != "mine" {
		t.Fatalf("describe %+v", dg)
	}
	l := h.c.ListGroups(&kmsg.ListGroupsRequest{Version: 4, StatesFilter: []string{"stable"}})
	if len(l.Groups) != 1 || l.Groups[0].Group != "g" || l.Groups[0].ProtocolType != "consumer" {
		t.Fatalf("list %+v", l.Groups)
	}
}

func TestOldJoinVersionNeedsNoMemberID(t *testing.T) {
	h := newHarness(t)
	r := h.joinAsync(joinReq("g", "", 2)).wait(t)
	wantCode(t, "v2 join", r.ErrorCode, nil)
	if r.MemberID == "" || !strings.HasPrefix(r.MemberID, "client-") || r.Generation != 1 {
		t.Fatalf("v2 join response %+v", r)
	}
}

func TestSecondMemberTriggersRebalance(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 1)
	m2, pj2 := h.newMember("g")
	h.waitFor("rebalance", func(g *group) bool { return g.state == PreparingRebalance }, "g")
	pj2.mustBlock(t)
	wantCode(t, "leader heartbeat", h.heartbeat("g", ids[0], gen), kerr.RebalanceInProgress)

	r1 := h.joinAsync(joinReq("g", ids[0], 5)).wait(t)
	r2 := pj2.wait(t)
	if r1.Generation != gen+1 || r2.Generation != gen+1 {
		t.Fatalf("generations %d %d, want %d", r1.Generation, r2.Generation, gen+1)
	}
	if r1.LeaderID != ids[0] || len(r1.Members) != 2 || len(r2.Members) != 0 || r2.LeaderID != ids[0] {
		t.Fatalf("leader keeps leading and alone sees members: %+v / %+v", r1, r2)
	}
	follower := h.syncAsync("g", m2, gen+1, nil)
	h.waitFor("follower parked in sync", func(g *group) bool { return g.members[m2].syncReply != nil }, "g")
	leader := h.syncAsync("g", ids[0], gen+1, map[string]string{ids[0]: "p0", m2: "p1"})
	if a := follower.wait(t).MemberAssignment; string(a) != "p1" {
		t.Fatalf("follower got %q", a)
	}
	if a := leader.wait(t).MemberAssignment; string(a) != "p0" {
		t.Fatalf("leader got %q", a)
	}
	// The old generation is fenced.
	wantCode(t, "old generation heartbeat", h.heartbeat("g", ids[0], gen), kerr.IllegalGeneration)
	wantCode(t, "old generation commit", commitCode(t, h.commit("g", ids[0], gen, "t", map[int32]int64{0: 1})), kerr.IllegalGeneration)
	wantCode(t, "unknown member heartbeat", h.heartbeat("g", "nobody", gen+1), kerr.UnknownMemberID)
}

func TestLeaveTriggersRebalance(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	resp := h.c.LeaveGroup(&kmsg.LeaveGroupRequest{Version: 0, Group: "g", MemberID: ids[1]})
	wantCode(t, "leave", resp.ErrorCode, nil)
	wantCode(t, "heartbeat after leave", h.heartbeat("g", ids[0], gen), kerr.RebalanceInProgress)
	r := h.joinAsync(joinReq("g", ids[0], 5)).wait(t)
	if r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("rejoin after leave %+v", r)
	}
	resp = h.c.LeaveGroup(&kmsg.LeaveGroupRequest{Version: 0, Group: "g", MemberID: ids[1]})
	wantCode(t, "second leave", resp.ErrorCode, kerr.UnknownMemberID)

	// v3+ batches members; the last one out leaves the group Empty.
	resp = h.c.LeaveGroup(&kmsg.LeaveGroupRequest{Version: 3, Group: "g", Members: []kmsg.LeaveGroupRequestMember{{MemberID: ids[0]}, {MemberID: "ghost"}}})
	if resp.ErrorCode != 0 || len(resp.Members) != 2 || resp.Members[0].ErrorCode != 0 || resp.Members[1].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("batched leave %+v", resp)
	}
	if st := h.state("g"); st != Empty {
		t.Fatalf("state %v after everyone left", st)
	}
}

func TestSessionExpiryRemovesMember(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	// The leader keeps heartbeating; the follower goes silent.
	for elapsed := time.Duration(0); elapsed <= testSession; elapsed += testSession / 4 {
		h.clock.Advance(testSession / 4)
		code := h.heartbeat("g", ids[0], gen)
		if code == kerr.RebalanceInProgress.Code {
			break
		}
		wantCode(t, "heartbeat", code, nil)
	}
	wantCode(t, "heartbeat once the follower expired", h.heartbeat("g", ids[0], gen), kerr.RebalanceInProgress)
	r := h.joinAsync(joinReq("g", ids[0], 5)).wait(t)
	if r.Generation != gen+1 || len(r.Members) != 1 || r.Members[0].MemberID != ids[0] {
		t.Fatalf("rejoin %+v", r)
	}
	wantCode(t, "expired member heartbeat", h.heartbeat("g", ids[1], gen), kerr.UnknownMemberID)
}

func TestRebalanceTimeoutDropsMembersThatDoNotRejoin(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	m3, pj3 := h.newMember("g")
	h.waitFor("rebalance", func(g *group) bool { return g.state == PreparingRebalance }, "g")
	pj1 := h.joinAsync(joinReq("g", ids[0], 5))
	h.waitParked("g", 2)
	pj1.mustBlock(t)
	pj3.mustBlock(t)
	h.clock.Advance(testRebalance)
	r1, r3 := pj1.wait(t), pj3.wait(t)
	if r1.Generation != gen+1 || r3.Generation != gen+1 || len(r1.Members)+len(r3.Members) != 2 {
		t.Fatalf("after rebalance timeout: %+v / %+v", r1, r3)
	}
	_ = m3
	wantCode(t, "dropped member heartbeat", h.heartbeat("g", ids[1], gen), kerr.UnknownMemberID)
}

func TestPendingSyncTimeoutRemovesMember(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 1)
	m2, pj2 := h.newMember("g")
	h.waitFor("rebalance", func(g *group) bool { return g.state == PreparingRebalance }, "g")
	h.joinAsync(joinReq("g", ids[0], 5)).wait(t)
	pj2.wait(t)
	// Only the leader syncs; the follower heartbeats but never syncs.
	wantCode(t, "leader sync", h.syncAsync("g", ids[0], gen+1, map[string]string{ids[0]: "x", m2: "y"}).wait(t).ErrorCode, nil)
	for elapsed := time.Duration(0); elapsed < testRebalance-testSession/2; elapsed += testSession / 2 {
		h.clock.Advance(testSession / 2)
		wantCode(t, "leader heartbeat", h.heartbeat("g", ids[0], gen+1), nil)
		wantCode(t, "follower heartbeat", h.heartbeat("g", m2, gen+1), nil)
	}
	h.clock.Advance(testSession / 2)
	wantCode(t, "leader heartbeat", h.heartbeat("g", ids[0], gen+1), kerr.RebalanceInProgress)
	wantCode(t, "unsynced follower heartbeat", h.heartbeat("g", m2, gen+1), kerr.UnknownMemberID)
}

func TestFencingDuringRebalance(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 1)
	_, pj2 := h.newMember("g")
	h.waitFor("rebalance", func(g *group) bool { return g.state == PreparingRebalance }, "g")
	wantCode(t, "sync while preparing", h.syncAsync("g", ids[0], gen, nil).wait(t).ErrorCode, kerr.RebalanceInProgress)
	// Commits are still accepted while preparing, from the current generation.
	wantCode(t, "commit while preparing", commitCode(t, h.commit("g", ids[0], gen, "t", map[int32]int64{0: 5})), nil)
	h.joinAsync(joinReq("g", ids[0], 5)).wait(t)
	pj2.wait(t)
	wantCode(t, "commit while completing", commitCode(t, h.commit("g", ids[0], gen+1, "t", map[int32]int64{0: 6})), kerr.RebalanceInProgress)
	wantCode(t, "simple commit to an active group", commitCode(t, h.commit("g", "", -1, "t", map[int32]int64{0: 7})), kerr.UnknownMemberID)
	wantCode(t, "join with unknown member id", h.c.JoinGroup(context.Background(), Client{}, joinReq("g", "bogus", 5)).ErrorCode, kerr.UnknownMemberID)
	wantCode(t, "join with another protocol", h.c.JoinGroup(context.Background(), Client{}, joinReq("g", "", 5, "sticky")).ErrorCode, kerr.InconsistentGroupProtocol)
	bad := joinReq("g", "", 5)
	bad.SessionTimeoutMillis = int32(h.cfg.MaxSessionTimeout/time.Millisecond) + 1
	wantCode(t, "join with too long a session", h.c.JoinGroup(context.Background(), Client{}, bad).ErrorCode, kerr.InvalidSessionTimeout)
	wantCode(t, "join without group", h.c.JoinGroup(context.Background(), Client{}, joinReq("", "", 5)).ErrorCode, kerr.InvalidGroupID)
	if got := h.fetch("g", "t", 0); got[0] != 5 {
		t.Fatalf("committed %v, want 5", got)
	}
}

func TestProtocolSelection(t *testing.T) {
	h := newHarness(t)
	ra := h.joinAsync(joinReq("g", "", 3, "range", "roundrobin")).wait(t)
	b := h.joinAsync(joinReq("g", "", 3, "roundrobin", "range"))
	c := h.joinAsync(joinReq("g", "", 3, "roundrobin"))
	h.waitFor("three members", func(g *group) bool { return len(g.members) == 3 }, "g")
	ra2 := h.joinAsync(joinReq("g", ra.MemberID, 3, "range", "roundrobin")).wait(t)
	rb, rc := b.wait(t), c.wait(t)
	for _, r := range []*kmsg.JoinGroupResponse{ra2, rb, rc} {
		if r.ErrorCode != 0 || *r.Protocol != "roundrobin" {
			t.Fatalf("want roundrobin, the only protocol all support: %+v", r)
		}
	}
}

func TestStaticMembership(t *testing.T) {
	h := newHarness(t)
	static := func(memberID string) *kmsg.JoinGroupRequest {
		r := joinReq("g", memberID, 5)
		r.InstanceID = kmsg.StringPtr("instance-1")
		return r
	}
	r := h.joinAsync(static("")).wait(t) // static members skip MEMBER_ID_REQUIRED
	wantCode(t, "static join", r.ErrorCode, nil)
	old := r.MemberID
	if !strings.HasPrefix(old, "instance-1-") {
		t.Fatalf("static member id %q", old)
	}
	wantCode(t, "sync", h.syncAsync("g", old, r.Generation, map[string]string{old: "kept"}).wait(t).ErrorCode, nil)

	// Restart with the same instance id: a new member id, the same
	// generation, no rebalance, the assignment kept.
	r2 := h.joinAsync(static("")).wait(t)
	wantCode(t, "static rejoin", r2.ErrorCode, nil)
	if r2.MemberID == old || r2.Generation != r.Generation {
		t.Fatalf("static rejoin %+v (old member %s, generation %d)", r2, old, r.Generation)
	}
	if st := h.state("g"); st != Stable {
		t.Fatalf("state %v, static rejoin must not rebalance", st)
	}
	s := h.syncAsync("g", r2.MemberID, r2.Generation, nil).wait(t)
	if string(s.MemberAssignment) != "kept" {
		t.Fatalf("assignment after static rejoin %q", s.MemberAssignment)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = 3, "g", old, r.Generation, kmsg.StringPtr("instance-1")
	wantCode(t, "fenced heartbeat", h.c.Heartbeat(hb).ErrorCode, kerr.FencedInstanceID)
	hb.MemberID = r2.MemberID
	wantCode(t, "current heartbeat", h.c.Heartbeat(hb).ErrorCode, nil)
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version, oc.Group, oc.MemberID, oc.Generation, oc.InstanceID = 7, "g", old, r.Generation, kmsg.StringPtr("instance-1")
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	wantCode(t, "fenced commit", commitCode(t, h.c.OffsetCommit(oc)), kerr.FencedInstanceID)
	wantCode(t, "fenced join", h.c.JoinGroup(context.Background(), Client{}, static(old)).ErrorCode, kerr.FencedInstanceID)

	// Leaving by instance id removes the member.
	lr := h.c.LeaveGroup(&kmsg.LeaveGroupRequest{Version: 4, Group: "g", Members: []kmsg.LeaveGroupRequestMember{{InstanceID: kmsg.StringPtr("instance-1")}}})
	if lr.ErrorCode != 0 || lr.Members[0].ErrorCode != 0 {
		t.Fatalf("leave by instance %+v", lr)
	}
	if st := h.state("g"); st != Empty {
		t.Fatalf("state %v after the static member left", st)
	}
}

func TestInitialRebalanceDelayWaitsForMoreMembers(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.InitialRebalanceDelay = 3 * time.Second })
	a := h.joinAsync(joinReq("g", "", 3))
	h.waitParked("g", 1)
	h.clock.Advance(2 * time.Second)
	a.mustBlock(t)
	b := h.joinAsync(joinReq("g", "", 3))
	h.waitParked("g", 2)
	h.clock.Advance(time.Second) // the first delay ends, but a member arrived: wait again
	a.mustBlock(t)
	b.mustBlock(t)
	h.clock.Advance(3 * time.Second)
	ra, rb := a.wait(t), b.wait(t)
	if ra.Generation != 1 || rb.Generation != 1 || len(ra.Members)+len(rb.Members) != 2 {
		t.Fatalf("after the initial delay: %+v / %+v", ra, rb)
	}
}

func TestOffsetFetchUnknownGroup(t *testing.T) {
	h := newHarness(t)
	if got := h.fetch("never", "t", 0, 3); got[0] != -1 || got[3] != -1 {
		t.Fatalf("fetch of an unknown group %v", got)
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "never", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}}, {Group: "also-never"}}
	resp := h.c.OffsetFetch(req)
	if len(resp.Groups) != 2 || resp.Groups[0].ErrorCode != 0 || resp.Groups[0].Topics[0].Partitions[0].Offset != -1 || len(resp.Groups[1].Topics) != 0 {
		t.Fatalf("v8 fetch %+v", resp)
	}
	d := h.c.DescribeGroups(&kmsg.DescribeGroupsRequest{Version: 5, Groups: []string{"never"}})
	if d.Groups[0].State != "Dead" || d.Groups[0].ErrorCode != 0 {
		t.Fatalf("describe unknown %+v", d.Groups[0])
	}
	if len(h.c.ListGroups(&kmsg.ListGroupsRequest{}).Groups) != 0 {
		t.Fatal("fetching must not create groups")
	}
}

func TestReplayRebuildsOffsetsAndGroups(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	wantCode(t, "commit", commitCode(t, h.commit("g", ids[0], gen, "t", map[int32]int64{0: 100, 1: 200})), nil)
	wantCode(t, "recommit", commitCode(t, h.commit("g", ids[1], gen, "t", map[int32]int64{1: 250})), nil)
	wantCode(t, "simple commit", commitCode(t, h.commit("simple", "", -1, "u", map[int32]int64{0: 7})), nil)

	h.start() // a new coordinator replays the same log
	if got := h.fetch("g", "t", 0, 1); got[0] != 100 || got[1] != 250 {
		t.Fatalf("replayed offsets %v", got)
	}
	if got := h.fetch("simple", "u", 0); got[0] != 7 {
		t.Fatalf("replayed simple offsets %v", got)
	}
	d := h.c.DescribeGroups(&kmsg.DescribeGroupsRequest{Version: 4, Groups: []string{"g"}}).Groups[0]
	if d.State != "Stable" || len(d.Members) != 2 {
		t.Fatalf("replayed group %+v", d)
	}
	// Members resume their generation after the coordinator moved.
	wantCode(t, "heartbeat after reload", h.heartbeat("g", ids[0], gen), nil)
	s := h.syncAsync("g", ids[1], gen, nil).wait(t)
	if string(s.MemberAssignment) != "assignment-"+ids[1] {
		t.Fatalf("assignment after reload %q", s.MemberAssignment)
	}
	// Members that do not come back expire; the group ends up Empty and
	// a rebalance bumps the generation, which also survives a reload.
	h.clock.Advance(testSession + time.Second)
	if st := h.state("g"); st != Empty {
		t.Fatalf("state %v after every restored member expired", st)
	}
	h.start()
	d = h.c.DescribeGroups(&kmsg.DescribeGroupsRequest{Version: 4, Groups: []string{"g"}}).Groups[0]
	if d.State != "Empty" || len(d.Members) != 0 {
		t.Fatalf("reloaded empty group %+v", d)
	}

	// Deleting writes tombstones: gone after another reload.
	del := h.c.DeleteGroups(&kmsg.DeleteGroupsRequest{Version: 2, Groups: []string{"g", "nope"}})
	if del.Groups[0].ErrorCode != 0 || del.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete %+v", del.Groups)
	}
	h.start()
	if got := h.fetch("g", "t", 0, 1); got[0] != -1 || got[1] != -1 {
		t.Fatalf("offsets after delete and reload %v", got)
	}
	l := h.c.ListGroups(&kmsg.ListGroupsRequest{Version: 3})
	if len(l.Groups) != 1 || l.Groups[0].Group != "simple" {
		t.Fatalf("groups after delete and reload %+v", l.Groups)
	}
}

func TestDeleteNonEmptyGroupRefused(t *testing.T) {
	h := newHarness(t)
	h.stableGroup("g", 1)
	del := h.c.DeleteGroups(&kmsg.DeleteGroupsRequest{Groups: []string{"g"}})
	wantCode(t, "delete", del.Groups[0].ErrorCode, kerr.NonEmptyGroup)
}

func TestCommitNotAcknowledgedWhenStoreFails(t *testing.T) {
	h := newHarness(t)
	h.log.SetFailAppends(errors.New("disk on fire"))
	wantCode(t, "commit", commitCode(t, h.commit("g", "", -1, "t", map[int32]int64{0: 1})), kerr.CoordinatorNotAvailable)
	h.log.SetFailAppends(kerr.NotLeaderForPartition)
	wantCode(t, "commit", commitCode(t, h.commit("g", "", -1, "t", map[int32]int64{0: 1})), kerr.NotCoordinator)
	h.log.SetFailAppends(nil)
	if got := h.fetch("g", "t", 0); got[0] != -1 {
		t.Fatalf("a failed commit is visible: %v", got)
	}
}

func TestCommitValidation(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.PartitionCount = func(topic string) (int32, bool) { return 2, topic == "t" }
	})
	resp := h.commit("g", "", -1, "t", map[int32]int64{0: 1, 5: 1})
	for _, p := range resp.Topics[0].Partitions {
		want := int16(0)
		if p.Partition == 5 {
			want = kerr.UnknownTopicOrPartition.Code
		}
		if p.ErrorCode != want {
			t.Fatalf("partition %d code %d, want %d", p.Partition, p.ErrorCode, want)
		}
	}
	wantCode(t, "unknown topic", commitCode(t, h.commit("g", "", -1, "nope", map[int32]int64{0: 1})), kerr.UnknownTopicOrPartition)
	wantCode(t, "commit with a generation to an unknown group", commitCode(t, h.commit("fresh", "m", 3, "t", map[int32]int64{0: 1})), kerr.IllegalGeneration)
}

func TestNotCoordinatorForUnloadedPartition(t *testing.T) {
	h := newHarness(t)
	p := h.c.Partition("g")
	h.stableGroup("g", 1)
	pj := h.joinAsync(joinReq("g", "", 3)) // parked until the leader rejoins
	h.waitParked("g", 1)
	// Unloading answers parked requests so clients look the coordinator up again.
	h.c.Unload(p)
	wantCode(t, "parked join on unload", pj.wait(t).ErrorCode, kerr.NotCoordinator)
	wantCode(t, "heartbeat", h.heartbeat("g", "m", 1), kerr.NotCoordinator)
	wantCode(t, "commit", commitCode(t, h.commit("g", "", -1, "t", map[int32]int64{0: 1})), kerr.NotCoordinator)
	if h.c.Loaded(p) {
		t.Fatal("partition still loaded")
	}
}

func TestBatchEncodingRoundTrip(t *testing.T) {
	recs := []record{{key: []byte("k1"), value: []byte("v1")}, {key: []byte("k2")}}
	b := encodeBatch(recs, 1234)
	var got []record
	if err := decodeBatches(append(append([]byte(nil), b...), b...), func(r record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || string(got[0].key) != "k1" || string(got[0].value) != "v1" || got[1].value != nil || string(got[3].key) != "k2" {
		t.Fatalf("decoded %+v", got)
	}
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b); err != nil || kb.NumRecords != 2 || kb.Magic != 2 || kb.FirstTimestamp != 1234 {
		t.Fatalf("kmsg reads the batch as %+v (%v)", kb, err)
	}
	for i := range b {
		corrupt := append([]byte(nil), b...)
		corrupt[i] ^= 0xff
		_ = decodeBatches(corrupt, func(record) error { return nil }) // must not panic
		if i >= 21 && decodeBatches(corrupt, func(record) error { return nil }) == nil {
			t.Fatalf("corruption at byte %d not detected", i)
		}
	}
	for i := range b {
		_ = decodeBatches(b[:i], func(record) error { return nil })
	}
}
