package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaveGroup removes members, Kafka's handleLeaveGroup: v0–v2 name one
// member id, v3+ a batch of members that static members may name by
// instance id. The group rebalances without them.
func (c *Coordinator) LeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	codes := c.leave(req.Group, leaving, &resp.ErrorCode)
	if req.Version < 3 {
		if resp.ErrorCode == 0 {
			resp.ErrorCode = codes[0]
		}
		return resp
	}
	if resp.ErrorCode != 0 {
		return resp
	}
	for i, lm := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID = lm.MemberID
		rm.InstanceID = lm.InstanceID
		rm.ErrorCode = codes[i]
		resp.Members = append(resp.Members, rm)
	}
	return resp
}

func (c *Coordinator) leave(groupID string, leaving []kmsg.LeaveGroupRequestMember, top *int16) []int16 {
	codes := make([]int16, len(leaving))
	if groupID == "" {
		*top = kerr.InvalidGroupID.Code
		return codes
	}
	s, code := c.lockShard(groupID)
	if code != 0 {
		*top = code
		return codes
	}
	defer s.mu.Unlock()
	g := s.groups[groupID]
	if g == nil {
		for i := range codes {
			codes[i] = kerr.UnknownMemberID.Code
		}
		return codes
	}
	if g.state == Dead {
		*top = kerr.CoordinatorNotAvailable.Code
		return codes
	}
	for i, lm := range leaving {
		memberID := lm.MemberID
		if lm.InstanceID != nil {
			held, ok := g.static[*lm.InstanceID]
			switch {
			case !ok:
				codes[i] = kerr.UnknownMemberID.Code
				continue
			case memberID != "" && memberID != held:
				codes[i] = kerr.FencedInstanceID.Code
				continue
			}
			memberID = held
		}
		if p, ok := g.pending[memberID]; ok {
			p.timer.Stop()
			delete(g.pending, memberID)
			c.tryCompleteJoin(g)
			continue
		}
		m := g.members[memberID]
		if m == nil {
			codes[i] = kerr.UnknownMemberID.Code
			continue
		}
		g.logger().WithField("member", memberID).Info("member leaving")
		c.removeMemberAndUpdate(g, m, "member "+memberID+" left")
	}
	return codes
}
