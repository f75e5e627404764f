package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/group"
	"github.com/spool-log/spool/wire"
)

// JoinGroup: v0-9
//
// Behavior:
// * Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED.
// * Kafka's classic rebalance, in package group: the response waits until
//   every known member has rejoined or the longest rebalance timeout passed
//   (the first rebalance of an empty group also waits
//   group.initial.rebalance.delay, 3 s by default, for more members). The
//   connection's later requests wait behind it, as in Kafka.
// * The broker relays protocols; it picks one every member supports (a
//   vote, as Kafka does) and gives the leader every member's metadata.
// * New dynamic members on v4+ first get MEMBER_ID_REQUIRED with their id.
// * Static members (InstanceID, v5+) replace their previous incarnation,
//   which is fenced with FENCED_INSTANCE_ID; in a Stable group with the same
//   metadata there is no rebalance.
//
// Version notes:
// * v0: no RebalanceTimeoutMillis: the session timeout is used
// * v2: ThrottleMillis
// * v4: MEMBER_ID_REQUIRED
// * v5: InstanceID
// * v6: flexible versions
// * v7: ProtocolType in response
// * v8: Reason (logged only by Kafka; ignored)
// * v9: SkipAssignment for a static leader rejoining a Stable group

func (n *Node) handleJoinGroup(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.JoinGroupRequest)
	coord, code := n.groupCoordinatorAs(n.requesterOf(ctx, wreq), kmsg.ACLOperationRead, req.Group)
	if code != 0 {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = code
		return resp
	}
	return coord.JoinGroup(ctx, group.ClientOf(wreq.ClientID, wreq.RemoteAddr), req)
}
