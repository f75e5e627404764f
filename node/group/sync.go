package group

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup is the second half of a rebalance, Kafka's doSyncGroup. The
// leader's request carries every member's assignment; it is stored with the
// group and handed to each member, whose SyncGroup blocks until then. In a
// Stable group a member simply gets its current assignment back.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	fail := func(code int16) *kmsg.SyncGroupResponse {
		resp.ErrorCode = code
		return resp
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID.Code)
	}
	s, code := c.lockShard(req.Group)
	if code != 0 {
		return fail(code)
	}
	done, wait := c.sync(s.groups[req.Group], req, resp)
	s.mu.Unlock()
	if wait == nil {
		return done
	}
	select {
	case r := <-wait:
		return r
	case <-ctx.Done():
		return fail(kerr.RebalanceInProgress.Code)
	}
}

func (c *Coordinator) sync(g *group, req *kmsg.SyncGroupRequest, resp *kmsg.SyncGroupResponse) (*kmsg.SyncGroupResponse, chan *kmsg.SyncGroupResponse) {
	fail := func(code int16) (*kmsg.SyncGroupResponse, chan *kmsg.SyncGroupResponse) {
		resp.ErrorCode = code
		return resp, nil
	}
	switch {
	case g == nil:
		return fail(kerr.UnknownMemberID.Code)
	case g.state == Dead:
		return fail(kerr.CoordinatorNotAvailable.Code)
	case g.isStaticMemberFenced(req.InstanceID, req.MemberID):
		return fail(kerr.FencedInstanceID.Code)
	}
	m := g.members[req.MemberID]
	switch {
	case m == nil:
		return fail(kerr.UnknownMemberID.Code)
	case req.Generation != g.generation:
		return fail(kerr.IllegalGeneration.Code)
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
		req.Protocol != nil && *req.Protocol != g.protocol:
		return fail(kerr.InconsistentGroupProtocol.Code)
	}

	switch g.state {
	case Empty:
		return fail(kerr.UnknownMemberID.Code)
	case PreparingRebalance:
		return fail(kerr.RebalanceInProgress.Code)
	case Stable:
		delete(g.pendingSync, m.id)
		resp.ProtocolType = kmsg.StringPtr(g.protocolType)
		resp.Protocol = kmsg.StringPtr(g.protocol)
		resp.MemberAssignment = g.assignmentOrEmpty(m.assignment)
		c.scheduleSession(g, m)
		return resp, nil
	}

	// CompletingRebalance: park until the leader's assignment is stored.
	m.failSync(kerr.RebalanceInProgress.Code) // superseded
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	m.syncReply = ch
	m.syncVersion = req.Version
	delete(g.pendingSync, m.id)
	if m.id != g.leader {
		return nil, ch
	}

	assignments := make(map[string][]byte, len(req.GroupAssignment))
	for _, a := range req.GroupAssignment {
		if g.members[a.MemberID] != nil {
			assignments[a.MemberID] = a.MemberAssignment
		}
	}
	for id, gm := range g.members {
		gm.assignment = g.assignmentOrEmpty(assignments[id])
	}
	if err := c.storeGroup(g); err != nil {
		g.logger().WithError(err).Warn("store group assignment")
		code := appendErrorCode(err)
		for _, gm := range g.members {
			gm.assignment = nil
			gm.failSync(code)
		}
		c.maybePrepareRebalance(g, "storing the assignment failed")
		return nil, ch
	}
	for _, gm := range g.sortedMembers() {
		if gm.syncReply == nil {
			continue
		}
		r := (&kmsg.SyncGroupRequest{Version: gm.syncVersion}).ResponseKind().(*kmsg.SyncGroupResponse)
		r.ProtocolType = kmsg.StringPtr(g.protocolType)
		r.Protocol = kmsg.StringPtr(g.protocol)
		r.MemberAssignment = gm.assignment
		gm.replySync(r)
		c.scheduleSession(g, gm)
	}
	g.transition(Stable)
	g.logger().Info("group stable")
	return nil, ch
}
