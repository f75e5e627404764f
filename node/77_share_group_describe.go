package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// ShareGroupDescribe: v1
//
// Behavior:
// * Per group: DESCRIBE on it, else GROUP_AUTHORIZATION_FAILED; answered
//   by its coordinator, else NOT_COORDINATOR; a group this coordinator
//   does not keep is GROUP_ID_NOT_FOUND (state Dead).
// * Members with their client id and host, rack, subscription, member
//   epoch and assignment (topic ids, names and partitions); the assignor
//   is "simple", the group state Empty or Stable. Authorized operations
//   when asked for.
//
// Version notes:
// * v0: KIP-932's early access; Kafka 4.1+ serve v1 only, as here

func (n *Node) handleShareGroupDescribe(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.ShareGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	who := n.requesterOf(ctx, wreq)
	coord, _ := n.coords.Shares.Get()
	for _, id := range req.GroupIDs {
		if _, code := n.groupCoordinatorAs(who, kmsg.ACLOperationDescribe, id); code != 0 {
			g := kmsg.NewShareGroupDescribeResponseGroup()
			g.GroupID, g.ErrorCode = id, code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g := coord.Describe(id)
		if g.ErrorCode == 0 && req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = who.authorizedOperations(groupOperations, kmsg.ACLResourceTypeGroup, id)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}
