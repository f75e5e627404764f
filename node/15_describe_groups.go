package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/authz"
	"github.com/spool-log/spool/wire"
)

// DescribeGroups: v0-6
//
// Behavior:
// * Authorization: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED
//   for it.
// * State, protocol type and members (client id and host); the protocol,
//   each member's metadata and assignment only while the group is Stable,
//   as Kafka does. An unknown group is reported Dead with no error.
// * Each group is answered by its own coordinator; groups another node
//   coordinates get NOT_COORDINATOR, and so does a group whose
//   coordinator cannot confirm with a quorum (Raft ReadIndex), after the
//   request arrived, that it still leads the group's offsets partition
//   (as OffsetFetch): a deposed leader does not describe a group a newer
//   one has moved on.
//
// Version notes:
// * v1: ThrottleMillis
// * v3: AuthorizedOperations: which of READ, DESCRIBE, DELETE the
//   principal may do on the group
// * v4: InstanceID of members
// * v5: flexible versions
// * v6: a group that does not exist gets GROUP_ID_NOT_FOUND with an
//   ErrorMessage (KIP-1043), still in the Dead state, instead of Dead with
//   no error; for a share group's id the message says it is not a classic
//   group, as Kafka's (a share group is described by ShareGroupDescribe)

func (n *Node) handleDescribeGroups(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	who := n.access.Requester(ctx, wreq)
	for _, id := range req.Groups {
		coord, code := n.groupCoordinatorAs(who, kmsg.ACLOperationDescribe, id)
		if code == 0 {
			code = n.coords.Groups.Confirm(ctx, coord, id)
		}
		if code != 0 {
			dg := kmsg.NewDescribeGroupsResponseGroup()
			dg.Group, dg.ErrorCode = id, code
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		one := *req
		one.Groups = []string{id}
		for _, g := range coord.DescribeGroups(&one).Groups {
			if g.ErrorCode == kerr.GroupIDNotFound.Code && g.ErrorMessage == nil {
				// Kafka's message for it (v6+; the field is not
				// sent before).
				g.ErrorMessage = kmsg.StringPtr(n.coords.Shares.ClassicNotFound(g.Group))
			}
			if req.IncludeAuthorizedOperations && g.ErrorCode == 0 {
				g.AuthorizedOperations = who.AuthorizedOperations(authz.GroupOperations, kmsg.ACLResourceTypeGroup, g.Group)
			}
			resp.Groups = append(resp.Groups, g)
		}
	}
	return resp
}
