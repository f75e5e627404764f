package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// LeaveGroup: v0-5
//
// Behavior:
// * Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED.
// * Removes the members and rebalances the rest at once, rather than after
//   their session timeout.
//
// Version notes:
// * v1: ThrottleMillis
// * v3: a batch of members, each by member id or static instance id, with
//   per-member errors
// * v4: flexible versions
// * v5: Reason (ignored)

func (n *Node) handleLeaveGroup(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.LeaveGroupRequest)
	coord, code := n.groupCoordinatorAs(n.access.Requester(ctx, wreq), kmsg.ACLOperationRead, req.Group)
	if code != 0 {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = code
		return resp
	}
	return coord.LeaveGroup(req)
}
