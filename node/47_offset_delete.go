package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// OffsetDelete: v0
//
// Behavior:
// * Deletes a group's committed offsets for the partitions named
//   (tombstones in __consumer_offsets, stored before the offsets leave
//   memory). An Empty group loses them all; a consumer group with members
//   keeps the offsets of topics a member subscribes to
//   (GROUP_SUBSCRIBED_TO_TOPIC per partition) and loses the others; a group
//   with members of another protocol type is NON_EMPTY_GROUP.
// * GROUP_ID_NOT_FOUND for an unknown group; NOT_COORDINATOR on a node
//   that does not coordinate the group (clients find it first).
// * A partition with no committed offset is answered without error.

func (n *Node) handleOffsetDelete(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.OffsetDeleteRequest)
	coord, code := n.groupCoordinatorFor(req.Group)
	if code != 0 {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = code
		return resp
	}
	return coord.OffsetDelete(req)
}
