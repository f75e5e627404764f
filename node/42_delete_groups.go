package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// DeleteGroups: v0-2
//
// Behavior:
// * Authorization: DELETE on each group, else GROUP_AUTHORIZATION_FAILED
//   for it.
// * Deletes groups that have no members, with their committed offsets
//   (tombstones in __consumer_offsets). NON_EMPTY_GROUP while members
//   remain; GROUP_ID_NOT_FOUND for unknown groups.
//
// Version notes:
// * v1: ThrottleMillis
// * v2: flexible versions

func (n *Node) handleDeleteGroups(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	who := n.requesterOf(ctx, wreq)
	for _, id := range req.Groups {
		coord, code := n.groupCoordinatorAs(who, kmsg.ACLOperationDelete, id)
		if code != 0 {
			dg := kmsg.NewDeleteGroupsResponseGroup()
			dg.Group, dg.ErrorCode = id, code
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		if sc, _ := n.coords.Shares.Get(); sc.Has(id) {
			resp.Groups = append(resp.Groups, n.coords.Shares.DeleteGroup(id))
			continue
		}
		one := *req
		one.Groups = []string{id}
		resp.Groups = append(resp.Groups, coord.DeleteGroups(&one).Groups...)
	}
	return resp
}
