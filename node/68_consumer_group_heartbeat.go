package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/group"
	"github.com/spool-log/spool/wire"
)

// ConsumerGroupHeartbeat: v0-1
//
// Behavior:
// * Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED;
//   then DESCRIBE on every subscribed topic, else TOPIC_AUTHORIZATION_FAILED,
//   as Kafka (a client may not learn of topics through its assignment).
// * KIP-848's consumer group protocol: the coordinator assigns partitions
//   itself with the server-side assignor the members name ("uniform", the
//   default, or "range"; any other is UNSUPPORTED_ASSIGNOR). Epoch 0 joins,
//   -1 leaves (-2 a static member's temporary leave, answered the same),
//   any other epoch heartbeats and must be the member's current one (or its
//   previous one, if it owns nothing it lost) else FENCED_MEMBER_EPOCH.
// * The group epoch advances on every membership or subscription change and
//   when a subscribed topic gains partitions; members reconcile towards the
//   new target assignment, a partition revoked from its old owner (the
//   owner's next heartbeat no longer lists it) before it is given to its new
//   one. A member silent for the consumer session timeout, or that keeps a
//   revoked partition past its rebalance timeout, is removed.
// * The group shares its coordinator and shard with classic groups. A
//   non-empty classic group answers GROUP_ID_NOT_FOUND; an empty one (only
//   offsets) becomes a consumer group and keeps its offsets.
// * The group is stored in __consumer_offsets as Kafka stores it (record
//   types 3-8: group epoch, subscribed topics, member subscriptions, target
//   assignment, each member's epochs and partitions) before the heartbeat is
//   answered; a failed append answers the error and changes nothing. After
//   the coordinator restarts, members heartbeat on with their ids and
//   epochs, each with a new session timeout.
// * SubscribedTopicRegex (RE2, Go's regexp, the syntax of Kafka's RE2J)
//   matches whole topic names, internal topics left out; it is resolved on
//   every heartbeat, so a matching topic created later rebalances the
//   group. An expression that does not compile is INVALID_REGULAR_EXPRESSION;
//   an empty one clears the member's regex.
//
// Version notes:
// * v0: the member id may come from the broker
// * v1: SubscribedTopicRegex; the client generates its member id (an empty
//   one is INVALID_REQUEST)

func (n *Node) handleConsumerGroupHeartbeat(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	who := n.requesterOf(ctx, wreq)
	coord, code := n.groupCoordinatorAs(who, kmsg.ACLOperationRead, req.Group)
	if code == 0 {
		for _, topic := range req.SubscribedTopicNames {
			if !who.mayTopic(kmsg.ACLOperationDescribe, topic) {
				code = kerr.TopicAuthorizationFailed.Code
				break
			}
		}
	}
	if code != 0 {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = code
		return resp
	}
	return coord.ConsumerGroupHeartbeat(group.ClientOf(wreq.ClientID, wreq.RemoteAddr), req)
}
