package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat keeps a member's session alive, Kafka's doHeartbeat. During a
// rebalance the answer is REBALANCE_IN_PROGRESS, which is how members learn
// they must rejoin.
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = c.heartbeat(req)
	return resp
}

func (c *Coordinator) heartbeat(req *kmsg.HeartbeatRequest) int16 {
	if req.Group == "" {
		return kerr.InvalidGroupID.Code
	}
	s, code := c.lockShard(req.Group)
	if code != 0 {
		return code
	}
	defer s.mu.Unlock()
	g := s.groups[req.Group]
	switch {
	case g == nil:
		return kerr.UnknownMemberID.Code
	case g.state == Dead:
		return kerr.CoordinatorNotAvailable.Code
	case g.isStaticMemberFenced(req.InstanceID, req.MemberID):
		return kerr.FencedInstanceID.Code
	}
	m := g.members[req.MemberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case req.Generation != g.generation:
		return kerr.IllegalGeneration.Code
	}
	switch g.state {
	case Empty:
		return kerr.UnknownMemberID.Code
	case PreparingRebalance:
		c.scheduleSession(g, m)
		return kerr.RebalanceInProgress.Code
	default: // CompletingRebalance, Stable
		c.scheduleSession(g, m)
		return 0
	}
}
