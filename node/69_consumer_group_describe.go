package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// ConsumerGroupDescribe: v0-1
//
// Behavior:
// * Authorization: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED
//   for it.
// * Describes KIP-848 consumer groups: state (Empty, Assigning,
//   Reconciling, Stable), group epoch, target assignment epoch, assignor,
//   and per member its epoch, subscription, current and target assignment
//   (topics by id and name). A classic or unknown group is
//   GROUP_ID_NOT_FOUND.
// * Each group is answered by its own coordinator; groups another node
//   coordinates get NOT_COORDINATOR, and so does a group whose
//   coordinator cannot confirm with a quorum (Raft ReadIndex), after the
//   request arrived, that it still leads the group's offsets partition
//   (as OffsetFetch): a deposed leader does not describe a group a newer
//   one has moved on.
//
// Version notes:
// * v1: MemberType (1, the consumer protocol, for every member: classic
//   members never join a consumer group here)

func (n *Node) handleConsumerGroupDescribe(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	who := n.requesterOf(ctx, wreq)
	for _, id := range req.Groups {
		coord, code := n.groupCoordinatorAs(who, kmsg.ACLOperationDescribe, id)
		if code == 0 {
			code = n.coords.Groups.Confirm(ctx, coord, id)
		}
		if code != 0 {
			dg := kmsg.NewConsumerGroupDescribeResponseGroup()
			dg.Group, dg.ErrorCode = id, code
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		one := *req
		one.Groups = []string{id}
		for _, g := range coord.ConsumerGroupDescribe(&one).Groups {
			if req.IncludeAuthorizedOperations && g.ErrorCode == 0 {
				g.AuthorizedOperations = who.authorizedOperations(groupOperations, kmsg.ACLResourceTypeGroup, g.Group)
			}
			resp.Groups = append(resp.Groups, g)
		}
	}
	return resp
}
