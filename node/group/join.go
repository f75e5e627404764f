package group

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup adds a member to a group or rejoins it, Kafka's doJoinGroup.
// It blocks until the rebalance answers the member (or ctx ends, in which
// case the member stays parked and its answer is dropped, as when Kafka's
// client disconnects). New dynamic members of v4+ get MEMBER_ID_REQUIRED
// with their id first; static members (group.instance.id) replace the
// member holding their instance id, fencing it.
func (c *Coordinator) JoinGroup(ctx context.Context, cl Client, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	fail := func(code int16) *kmsg.JoinGroupResponse {
		resp.ErrorCode = code
		return resp
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID.Code)
	}
	if req.InstanceID != nil && *req.InstanceID == "" {
		return fail(kerr.InvalidGroupID.Code)
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout {
		return fail(kerr.InvalidSessionTimeout.Code)
	}
	if req.Version == 0 || req.RebalanceTimeoutMillis <= 0 {
		req.RebalanceTimeoutMillis = req.SessionTimeoutMillis
	}

	s, code := c.lockShard(req.Group)
	if code != 0 {
		return fail(code)
	}
	g := s.groups[req.Group]
	if g == nil {
		if req.MemberID != "" {
			s.mu.Unlock()
			return fail(kerr.UnknownMemberID.Code)
		}
		g = c.newGroup(s, req.Group)
	}
	done, wait := c.join(g, cl, req, resp)
	if len(g.members) > 0 || len(g.pending) > 0 || len(g.offsets) > 0 || g.generation > 0 {
		s.groups[g.id] = g // a group that only saw a refused join is not kept
	}
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

// join runs under the shard lock. It returns either a finished response or
// the channel the parked request will be answered on.
func (c *Coordinator) join(g *group, cl Client, req *kmsg.JoinGroupRequest, resp *kmsg.JoinGroupResponse) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse) {
	fail := func(code int16) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse) {
		resp.ErrorCode = code
		return resp, nil
	}
	if g.state == Dead || g.deleting {
		return fail(kerr.CoordinatorNotAvailable.Code)
	}
	if g.consumer != nil {
		if len(g.consumer.members) > 0 {
			// Kafka refuses a classic member in a consumer-protocol group.
			return fail(kerr.InconsistentGroupProtocol.Code)
		}
		// An empty consumer group becomes classic, keeping its offsets;
		// its consumer records go first, or a reload would bring it back.
		if err := c.append(g.s, consumerRecords(g.id, g.consumer, nil)); err != nil {
			g.logger().WithError(err).Warn("store consumer group conversion")
			return fail(appendErrorCode(err))
		}
		g.consumer.shutdown()
		g.consumer = nil
	}
	if !g.supportsProtocols(req.ProtocolType, req.Protocols) {
		return fail(kerr.InconsistentGroupProtocol.Code)
	}

	if req.MemberID == "" {
		if len(g.members)+len(g.pending) >= c.cfg.MaxGroupSize && c.cfg.MaxGroupSize > 0 {
			return fail(kerr.GroupMaxSizeReached.Code)
		}
		if req.InstanceID != nil {
			if old, ok := g.static[*req.InstanceID]; ok && g.members[old] != nil {
				return c.replaceStaticMember(g, cl, req, resp, g.members[old])
			}
		}
		m := &member{
			id:         newMemberID(cl.ID, req.InstanceID),
			instanceID: req.InstanceID,
			clientID:   cl.ID,
			clientHost: cl.Host,
		}
		if req.Version >= 4 && req.InstanceID == nil {
			// KIP-394: hand out the id first, so a client that never
			// hears back does not leave a member behind to wait for.
			c.addPending(g, m.id, time.Duration(req.SessionTimeoutMillis)*time.Millisecond)
			resp.MemberID = m.id
			return fail(kerr.MemberIDRequired.Code)
		}
		if req.InstanceID != nil {
			g.static[*req.InstanceID] = m.id
		}
		return nil, c.addMemberAndRebalance(g, m, req)
	}

	if _, ok := g.pending[req.MemberID]; ok {
		if req.InstanceID != nil {
			return fail(kerr.UnknownMemberID.Code) // pending members are never static
		}
		g.pending[req.MemberID].timer.Stop()
		delete(g.pending, req.MemberID)
		m := &member{id: req.MemberID, clientID: cl.ID, clientHost: cl.Host}
		return nil, c.addMemberAndRebalance(g, m, req)
	}
	if g.isStaticMemberFenced(req.InstanceID, req.MemberID) {
		return fail(kerr.FencedInstanceID.Code)
	}
	m := g.members[req.MemberID]
	if m == nil || req.InstanceID != nil && g.static[*req.InstanceID] != req.MemberID {
		return fail(kerr.UnknownMemberID.Code)
	}

	switch g.state {
	case PreparingRebalance:
		return nil, c.updateMemberAndRebalance(g, m, req)
	case CompletingRebalance:
		if m.matches(req.Protocols) {
			// The member missed our answer; give it the same one.
			g.fillJoin(resp, m.id)
			return resp, nil
		}
		return nil, c.updateMemberAndRebalance(g, m, req)
	case Stable:
		if g.leader == m.id || !m.matches(req.Protocols) {
			// A leader's join forces a rebalance: it is how the
			// leader reacts to changes outside member metadata,
			// such as new partitions.
			return nil, c.updateMemberAndRebalance(g, m, req)
		}
		g.fillJoin(resp, m.id)
		return resp, nil
	default: // Empty with members cannot happen; let the member start over
		return fail(kerr.UnknownMemberID.Code)
	}
}

func (c *Coordinator) addPending(g *group, memberID string, session time.Duration) {
	p := &pendingMember{}
	p.timer = c.after(g.s, session, func() {
		if !g.alive() || g.pending[memberID] != p {
			return
		}
		delete(g.pending, memberID)
		c.tryCompleteJoin(g)
	})
	g.pending[memberID] = p
}

// park sets m up to wait for the end of the join barrier.
func (m *member) parkJoin(req *kmsg.JoinGroupRequest) chan *kmsg.JoinGroupResponse {
	m.failJoin(kerr.RebalanceInProgress.Code) // a join superseded by this one
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	m.joinReply = ch
	m.joinVersion = req.Version
	m.protocolType = req.ProtocolType
	m.protocols = req.Protocols
	m.sessionTimeout = time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	m.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	return ch
}

func (c *Coordinator) addMemberAndRebalance(g *group, m *member, req *kmsg.JoinGroupRequest) chan *kmsg.JoinGroupResponse {
	ch := m.parkJoin(req)
	if g.state == PreparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	g.add(m)
	g.logger().WithFields(logrus.Fields{"member": m.id, "client": m.clientID}).Info("member joining")
	c.maybePrepareRebalance(g, "member "+m.id+" joined")
	c.tryCompleteJoin(g)
	return ch
}

func (c *Coordinator) updateMemberAndRebalance(g *group, m *member, req *kmsg.JoinGroupRequest) chan *kmsg.JoinGroupResponse {
	ch := m.parkJoin(req)
	c.maybePrepareRebalance(g, "member "+m.id+" rejoined")
	c.tryCompleteJoin(g)
	return ch
}

// replaceStaticMember is KIP-345: a static member that comes back under
// its instance id takes over the old member's place under a new member id;
// the old id is fenced. In a Stable group with unchanged protocols nothing
// is rebalanced: the newcomer gets the current generation back and keeps
// the old assignment.
func (c *Coordinator) replaceStaticMember(g *group, cl Client, req *kmsg.JoinGroupRequest, resp *kmsg.JoinGroupResponse, old *member) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse) {
	old.failJoin(kerr.FencedInstanceID.Code)
	old.failSync(kerr.FencedInstanceID.Code)
	if old.sessionTimer != nil {
		old.sessionTimer.Stop()
	}
	old.sessionSeq++
	unchanged := old.matches(req.Protocols)

	m := &member{
		id:         newMemberID(cl.ID, req.InstanceID),
		instanceID: req.InstanceID,
		clientID:   cl.ID,
		clientHost: cl.Host,
		assignment: old.assignment,
	}
	delete(g.members, old.id)
	g.members[m.id] = m
	g.static[*req.InstanceID] = m.id
	if g.leader == old.id {
		g.leader = m.id
	}
	if _, ok := g.pendingSync[old.id]; ok {
		delete(g.pendingSync, old.id)
		g.pendingSync[m.id] = struct{}{}
	}
	g.logger().WithFields(logrus.Fields{"member": m.id, "fenced": old.id, "instance": *req.InstanceID}).Info("static member replaced")

	switch {
	case g.state == Stable && unchanged:
		m.protocolType = req.ProtocolType
		m.protocols = req.Protocols
		m.sessionTimeout = time.Duration(req.SessionTimeoutMillis) * time.Millisecond
		m.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
		if err := c.storeGroup(g); err != nil {
			// Undo: the old member keeps its place.
			delete(g.members, m.id)
			g.members[old.id] = old
			g.static[*req.InstanceID] = old.id
			if g.leader == m.id {
				g.leader = old.id
			}
			c.scheduleSession(g, old)
			resp.ErrorCode = appendErrorCode(err)
			return resp, nil
		}
		g.fillJoin(resp, m.id)
		if m.id == g.leader && req.Version >= 9 {
			resp.SkipAssignment = true // KIP-814: the leader need not reassign
		} else {
			resp.Members = nil
		}
		c.scheduleSession(g, m)
		return resp, nil
	case g.state == CompletingRebalance || g.state == Stable:
		ch := m.parkJoin(req)
		c.prepareRebalance(g, "static member "+*req.InstanceID+" rejoined with new metadata")
		return nil, ch
	default: // PreparingRebalance: take the old member's seat at the barrier
		ch := m.parkJoin(req)
		c.tryCompleteJoin(g)
		return nil, ch
	}
}
