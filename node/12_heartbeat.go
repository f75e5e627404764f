package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// Heartbeat: v0-4
//
// Behavior:
// * Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED.
// * Restarts the member's session timeout. REBALANCE_IN_PROGRESS tells the
//   member to rejoin; ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID that it was
//   left behind; FENCED_INSTANCE_ID that another process took its static
//   instance id.
//
// Version notes:
// * v1: ThrottleMillis
// * v3: InstanceID
// * v4: flexible versions

func (n *Node) handleHeartbeat(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.HeartbeatRequest)
	coord, code := n.groupCoordinatorAs(n.access.Requester(ctx, wreq), kmsg.ACLOperationRead, req.Group)
	if code != 0 {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = code
		return resp
	}
	return coord.Heartbeat(req)
}
