package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// SyncGroup: v0-5
//
// Behavior:
// * Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED.
// * The leader's request carries every member's assignment; the
//   coordinator stores it in __consumer_offsets with the group and answers
//   every member (followers wait for it). Members that do not send SyncGroup
//   within the rebalance timeout are removed and the group rebalances.
//
// Version notes:
// * v1: ThrottleMillis
// * v3: InstanceID
// * v4: flexible versions
// * v5: ProtocolType and Protocol, checked against the group's

func (n *Node) handleSyncGroup(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.SyncGroupRequest)
	coord, code := n.groupCoordinatorAs(n.access.Requester(ctx, wreq), kmsg.ACLOperationRead, req.Group)
	if code != 0 {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = code
		return resp
	}
	return coord.SyncGroup(ctx, req)
}
