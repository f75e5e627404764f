package node

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/group"
	"github.com/spool-log/spool/wire"
)

// ShareGroupHeartbeat: v1
//
// Behavior:
// * Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED;
//   DESCRIBE on every subscribed topic, else TOPIC_AUTHORIZATION_FAILED.
// * Answered by the group id's coordinator (the leader of its
//   __consumer_offsets partition, as consumer groups), else
//   NOT_COORDINATOR. An id a classic or consumer group holds is
//   GROUP_ID_NOT_FOUND.
// * Epoch 0 joins (the member id is the client's, 1-36 characters, and a
//   join names at least one topic), -1 leaves, any other must be the
//   member's epoch (or the one before, whose answer may have been lost),
//   else FENCED_MEMBER_EPOCH; an unknown member is UNKNOWN_MEMBER_ID.
// * node/share assigns every member every partition of its subscribed
//   topics (internal topics left out): members split records, not
//   partitions. Assignment is sent when it changes, with a new member
//   epoch. Membership is kept in memory: after the coordinator moves,
//   members are UNKNOWN_MEMBER_ID and join again.
//
// Version notes:
// * v0: KIP-932's early access; Kafka 4.1+ serve v1 only, as here

func (n *Node) handleShareGroupHeartbeat(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.ShareGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	if strings.TrimSpace(req.GroupID) == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	who := n.requesterOf(ctx, wreq)
	_, code := n.groupCoordinatorAs(who, kmsg.ACLOperationRead, req.GroupID)
	if code == 0 {
		for _, topic := range req.SubscribedTopicNames {
			if !who.mayTopic(kmsg.ACLOperationDescribe, topic) {
				code = kerr.TopicAuthorizationFailed.Code
				break
			}
		}
	}
	coord, _ := n.coords.Shares.Get()
	if code == 0 && req.MemberEpoch == 0 && !coord.Has(req.GroupID) && n.coords.Shares.Taken(req.GroupID) {
		code = kerr.GroupIDNotFound.Code
	}
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	cl := group.ClientOf(wreq.ClientID, wreq.RemoteAddr)
	return coord.Heartbeat(req, cl.ID, cl.Host, n.coords.Shares.Resolve)
}
