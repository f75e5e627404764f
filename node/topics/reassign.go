package topics

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spool-log/spool/membership"
)

// Why a reassignment is refused, beside the alterations' reasons: none is
// under way to cancel, or the catalog's entry changed under it (the move
// may or may not stand: the client asks again).
var (
	ErrNoReassignment = errors.New("no reassignment in progress")
	ErrMoveRaced      = errors.New("the topic changed under the reassignment")
)

// Reassign starts moving partition index of topic to the replicas target
// (AlterPartitionReassignments), or, with target nil, cancels the move
// under way; evenFactor says why an even target is refused (moving back
// to an even list, a cancel, is allowed). Refusals are Refusal.
func (c *Catalog) Reassign(topic string, index int32, target []int32, evenFactor func(rf int) string) error {
	if err := membership.ValidateTopicName(topic); err != nil {
		return refuse(ErrUnknownTopic, err.Error())
	}
	spec, ok := c.Topic(topic)
	if !ok || index < 0 || index >= spec.Partitions {
		return refuse(ErrUnknownTopic, fmt.Sprintf("unknown topic or partition %s/%d", topic, index))
	}
	cur := spec.Replicas[index]
	_, moving := spec.Moves[index]
	change := func(*membership.TopicEntry) error { return nil }
	switch {
	case target == nil && !moving:
		return refuse(ErrNoReassignment, fmt.Sprintf("no reassignment of %s/%d under way", topic, index))
	case target == nil:
		// Decided on the catalog's latest entry, not this view: a move
		// that ended meanwhile is not started back (membership.CancelMove).
		change = membership.CancelMove(index)
		target = cur
	default:
		change = c.agent.SetMove(index, target)
	}
	switch {
	case !moving && slices.Equal(target, cur):
		return nil
	case len(target) != len(cur):
		return refuse(ErrReplicationFactor, fmt.Sprintf("%d replicas for a partition of %d: changing the replication factor is not supported", len(target), len(cur)))
	case len(cur) < 2:
		return refuse(ErrInvalidAssignment, "a partition with a single copy has no Raft group to move")
	case len(target)%2 == 0 && !slices.Equal(target, cur):
		// Moving back (a cancel) is allowed: it leaves the partition as
		// it was.
		return refuse(ErrReplicationFactor, evenFactor(len(target)))
	}
	_, err := c.Alter(topic, change)
	switch {
	case errors.Is(err, membership.ErrMove):
		return refuse(ErrInvalidAssignment, err.Error())
	case errors.Is(err, membership.ErrUnknownTopic):
		return refuse(ErrUnknownTopic, err.Error())
	case errors.Is(err, membership.ErrNotDurable):
		return refuse(ErrNotDurable, err.Error())
	case errors.Is(err, membership.ErrTopicChanged):
		return refuse(ErrMoveRaced, err.Error())
	}
	return err
}
