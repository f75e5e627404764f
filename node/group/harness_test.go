package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
)

const (
	testSession   = 10 * time.Second
	testRebalance = 20 * time.Second
)

type harness struct {
	t     *testing.T
	c     *Coordinator
	log   *MemLog
	clock *manualClock
	cfg   Config
}

func newHarness(t *testing.T, mod ...func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, log: NewMemLog(), clock: newManualClock()}
	h.cfg = DefaultConfig()
	h.cfg.Partitions = 4
	h.cfg.InitialRebalanceDelay = 0
	h.cfg.MinSessionTimeout = time.Millisecond
	h.cfg.Clock = h.clock
	for _, m := range mod {
		m(&h.cfg)
	}
	h.start()
	return h
}

// start (re)creates the coordinator over the harness's log and loads every
// partition, as a node does when it becomes coordinator.
func (h *harness) start() {
	h.t.Helper()
	if h.c != nil {
		h.c.Close()
	}
	c, err := New(h.cfg, h.log)
	if err != nil {
		h.t.Fatal(err)
	}
	for p := range h.cfg.Partitions {
		if err := c.Load(p); err != nil {
			h.t.Fatal(err)
		}
	}
	h.c = c
	h.t.Cleanup(c.Close)
}

func joinReq(group, memberID string, version int16, protocols ...string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = version
	r.Group = group
	r.MemberID = memberID
	r.ProtocolType = "consumer"
	r.SessionTimeoutMillis = int32(testSession / time.Millisecond)
	r.RebalanceTimeoutMillis = int32(testRebalance / time.Millisecond)
	if len(protocols) == 0 {
		protocols = []string{"range"}
	}
	for _, p := range protocols {
		r.Protocols = append(r.Protocols, kmsg.JoinGroupRequestProtocol{Name: p, Metadata: []byte("meta-" + p)})
	}
	return r
}

type pendingJoin chan *kmsg.JoinGroupResponse

func (h *harness) joinAsync(req *kmsg.JoinGroupRequest) pendingJoin {
	ch := make(pendingJoin, 1)
	go func() { ch <- h.c.JoinGroup(context.Background(), Client{ID: "client", Host: "/127.0.0.1"}, req) }()
	return ch
}

func (p pendingJoin) wait(t *testing.T) *kmsg.JoinGroupResponse {
	t.Helper()
	select {
	case r := <-p:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("JoinGroup was not answered")
		return nil
	}
}

func (p pendingJoin) mustBlock(t *testing.T) {
	t.Helper()
	select {
	case r := <-p:
		t.Fatalf("JoinGroup answered early: %+v", r)
	default:
	}
}

type pendingSync chan *kmsg.SyncGroupResponse

func (h *harness) syncAsync(group, memberID string, gen int32, assign map[string]string) pendingSync {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 3
	req.Group, req.MemberID, req.Generation = group, memberID, gen
	for m, a := range assign {
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m, MemberAssignment: []byte(a)})
	}
	ch := make(pendingSync, 1)
	go func() { ch <- h.c.SyncGroup(context.Background(), req) }()
	return ch
}

func (p pendingSync) wait(t *testing.T) *kmsg.SyncGroupResponse {
	t.Helper()
	select {
	case r := <-p:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("SyncGroup was not answered")
		return nil
	}
}

// waitFor polls cond, which reads coordinator state under the shard lock,
// until it holds or a deadline passes.
func (h *harness) waitFor(what string, cond func(g *group) bool, groupID string) {
	h.t.Helper()
	retry.Run(h.t, 5*time.Second, func() error {
		s, code := h.c.lockShard(groupID)
		if code != 0 {
			h.t.Fatalf("lock shard of %q: %v", groupID, kerr.ErrorForCode(code))
		}
		ok := cond(s.groups[groupID])
		s.mu.Unlock()
		return retry.Check(ok, "waiting for %s", what)
	})
}

// waitParked waits until n members of the group are parked in JoinGroup.
func (h *harness) waitParked(groupID string, n int) {
	h.t.Helper()
	h.waitFor("parked joins", func(g *group) bool {
		if g == nil {
			return false
		}
		parked := 0
		for _, m := range g.members {
			if m.joinReply != nil {
				parked++
			}
		}
		return parked == n
	}, groupID)
}

func (h *harness) state(groupID string) State {
	st := Dead
	h.waitFor("state", func(g *group) bool {
		if g != nil {
			st = g.state
		}
		return true
	}, groupID)
	return st
}

// newMember runs the v4 handshake: MEMBER_ID_REQUIRED, then a parked
// rejoin with the assigned id.
func (h *harness) newMember(group string, protocols ...string) (string, pendingJoin) {
	h.t.Helper()
	first := h.c.JoinGroup(context.Background(), Client{ID: "client"}, joinReq(group, "", 5, protocols...))
	if first.ErrorCode != kerr.MemberIDRequired.Code || first.MemberID == "" {
		h.t.Fatalf("first join: code %d member %q, want MEMBER_ID_REQUIRED with an id", first.ErrorCode, first.MemberID)
	}
	return first.MemberID, h.joinAsync(joinReq(group, first.MemberID, 5, protocols...))
}

func (h *harness) heartbeat(group, memberID string, gen int32) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 3
	req.Group, req.MemberID, req.Generation = group, memberID, gen
	return h.c.Heartbeat(req).ErrorCode
}

func (h *harness) commit(group, memberID string, gen int32, topic string, offsets map[int32]int64) *kmsg.OffsetCommitResponse {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 7
	req.Group, req.MemberID, req.Generation = group, memberID, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for p, o := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, o
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return h.c.OffsetCommit(req)
}

func commitCode(t *testing.T, resp *kmsg.OffsetCommitResponse) int16 {
	t.Helper()
	var code int16
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				code = rp.ErrorCode
			}
		}
	}
	return code
}

// fetch returns the committed offset of each partition (v1 request).
func (h *harness) fetch(group, topic string, partitions ...int32) map[int32]int64 {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 1
	req.Group = group
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: partitions}}
	resp := h.c.OffsetFetch(req)
	out := make(map[int32]int64)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				h.t.Fatalf("fetch %s/%d: %v", topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
			out[rp.Partition] = rp.Offset
		}
	}
	return out
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var wantCode int16
	if want != nil {
		wantCode = want.Code
	}
	if got != wantCode {
		t.Fatalf("%s: got %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// stableGroup brings n members through one rebalance and returns their ids
// (leader first) and the generation.
func (h *harness) stableGroup(gid string, n int) ([]string, int32) {
	h.t.Helper()
	var ids []string
	var joins []pendingJoin
	for i := 0; i < n; i++ {
		id, pj := h.newMember(gid)
		ids = append(ids, id)
		joins = append(joins, pj)
		if i == 0 {
			// The first member completes a generation alone; the
			// rest join it through a rebalance.
			r := pj.wait(h.t)
			wantCode(h.t, "first join", r.ErrorCode, nil)
			h.syncAsync(gid, id, r.Generation, map[string]string{id: "a0"}).wait(h.t)
			joins[0] = nil
		}
	}
	if n == 1 {
		return ids, 1
	}
	h.waitFor("rebalance", func(g *group) bool { return g.state == PreparingRebalance }, gid)
	joins[0] = h.joinAsync(joinReq(gid, ids[0], 5))
	var gen int32
	assign := make(map[string]string)
	for i, pj := range joins {
		r := pj.wait(h.t)
		wantCode(h.t, "join", r.ErrorCode, nil)
		gen = r.Generation
		if i == 0 && r.LeaderID != ids[0] {
			h.t.Fatalf("leader %s, want the first member %s", r.LeaderID, ids[0])
		}
		assign[ids[i]] = "assignment-" + ids[i]
	}
	var syncs []pendingSync
	for i := len(ids) - 1; i >= 0; i-- { // followers first: they wait for the leader
		if i == 0 {
			syncs = append(syncs, h.syncAsync(gid, ids[i], gen, assign))
		} else {
			syncs = append(syncs, h.syncAsync(gid, ids[i], gen, nil))
		}
	}
	for _, ps := range syncs {
		wantCode(h.t, "sync", ps.wait(h.t).ErrorCode, nil)
	}
	return ids, gen
}
