package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// ListGroups: v0-5
//
// Behavior:
// * Authorization as Kafka's: DESCRIBE on the cluster lists every group;
//   else only the groups the principal may DESCRIBE.
// * The groups this node coordinates (clients ask every broker and merge).
//   Every partition of __consumer_offsets this node leads is loaded first.
//   A partition of which this node holds a replica but cannot read (no
//   leader, or still loading) is answered as the error code, with the
//   groups of the partitions it could read listed all the same; a partition
//   held only by other brokers is theirs to answer, whether they are up or
//   not (Metadata shows it leaderless, and the CLI names its replicas), so
//   a broker down does not fail the answers of the brokers still up.
//
// Version notes:
// * v1: ThrottleMillis
// * v3: flexible versions
// * v4: StatesFilter, GroupState
// * v5: TypesFilter, GroupType ("classic", or "consumer" for KIP-848 groups)

func (n *Node) handleListGroups(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.ListGroupsRequest)
	who := n.requesterOf(ctx, wreq)
	all := who.mayCluster(kmsg.ACLOperationDescribe)
	coord, code := n.coords.Groups.LoadAll()
	if coord == nil {
		resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
		resp.ErrorCode = code
		return resp
	}
	resp := coord.ListGroups(req)
	if resp.ErrorCode == 0 {
		resp.ErrorCode = code
	}
	resp.Groups = append(resp.Groups, n.coords.Shares.ListGroups(req)...)
	if !all {
		visible := resp.Groups[:0]
		for _, g := range resp.Groups {
			if who.mayGroup(kmsg.ACLOperationDescribe, g.Group) {
				visible = append(visible, g)
			}
		}
		resp.Groups = visible
	}
	return resp
}
