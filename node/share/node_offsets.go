package share

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// The operations on a share partition's offsets that run on the
// partition's leader (OnLeader).
const (
	OpReset  = "reset"  // AlterShareGroupOffsets: a new SPSO
	OpDelete = "delete" // DeleteShareGroupOffsets, and a deleted group
)

// OnLeader resets (OpReset, to start) or deletes (OpDelete) k's share
// partition on the partition's leader, this node or another; it returns
// the partition's error code.
func (n *Node) OnLeader(op string, topic string, k Key, start int64) int16 {
	t, ok := n.b.Topic(topic)
	if !ok || k.Partition < 0 || k.Partition >= t.Partitions {
		return kerr.UnknownTopicOrPartition.Code
	}
	leader := n.b.LeaderOf(topic, k.Partition)
	switch {
	case leader < 0:
		return kerr.LeaderNotAvailable.Code
	case leader == n.b.NodeID():
		return n.onLeaderLocal(op, k, start)
	}
	out, err := n.forward(leader, op, stateRequest{Group: k.Group, TopicID: k.TopicID, Partition: k.Partition, StartOffset: start})
	if err != nil {
		n.log.WithError(err).WithField("group", k.Group).Warn("share offsets " + op)
		return kerr.CoordinatorNotAvailable.Code
	}
	return out.ErrorCode
}

// onLeaderLocal does OnLeader's op on this node.
func (n *Node) onLeaderLocal(op string, k Key, start int64) int16 {
	name, ok := n.b.TopicName(k.TopicID)
	if !ok {
		return kerr.UnknownTopicID.Code
	}
	log, e := n.b.Led(name, k.Partition)
	if e != nil {
		return e.Code
	}
	_, parts := n.Get()
	switch op {
	case OpReset:
		first, hwm, _ := log.Bounds(false)
		if start < first || start > hwm {
			return kerr.OffsetOutOfRange.Code
		}
		e = parts.Reset(k, log, start)
	default:
		e = parts.Delete(k)
	}
	if e != nil {
		return e.Code
	}
	return 0
}
