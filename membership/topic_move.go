package membership

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A reassignment moves a partition's replicas to a target list. The
// catalog records it as the topic's PartitionMove for the partition; the
// partition's Raft leader carries it out (adds the new replicas as
// learners, promotes them, moves leadership off a leaving replica, removes
// the old ones) and ends it by recording the target as the partition's
// replica list, with the move gone (node/moves: step.go). Until then
// Replicas is the list the move started from, so Kafka's AddingReplicas
// are Target minus Replicas and RemovingReplicas Replicas minus Target.
//
// Like every change to a topic, a move is a new version of the entry
// (AlterTopic) that stamps the partitions it changed: the merge is per
// partition (topic_merge.go), so moves of different partitions recorded
// concurrently on different nodes (a move started here, another's end
// recorded by its leader there) all survive, and concurrent changes of one
// partition settle on the newer stamp, deterministic on every node. Cancelling a move sets the target back to
// the replica list, which the leader rolls the group back to (CancelMove).

// PartitionMove is one partition's reassignment in progress.
type PartitionMove struct {
	Partition int32   `json:"partition"`
	Target    []int32 `json:"target"`
	// Started is when the move was recorded (Unix milliseconds, the
	// recording node's clock; 0 from a node of an earlier version), kept
	// when it is retargeted: what progress reports count elapsed from.
	Started int64 `json:"started,omitempty"`
}

// ErrMove refuses a reassignment that does not fit the topic.
var ErrMove = errors.New("invalid reassignment")

// Move is partition p's move, if one is under way.
func (e TopicEntry) Move(p int32) (PartitionMove, bool) {
	i, ok := slices.BinarySearchFunc(e.Moves, p, func(m PartitionMove, p int32) int { return int(m.Partition - p) })
	if !ok {
		return PartitionMove{}, false
	}
	return e.Moves[i], true
}

// Adding are the target's replicas partition p does not have yet (Kafka's
// AddingReplicas); Removing those it has that the target leaves out.
func (e TopicEntry) Adding(p int32) []int32 {
	m, ok := e.Move(p)
	if !ok || p < 0 || p >= int32(len(e.Replicas)) {
		return nil
	}
	return notIn(m.Target, e.Replicas[p])
}

// Removing: see Adding.
func (e TopicEntry) Removing(p int32) []int32 {
	m, ok := e.Move(p)
	if !ok || p < 0 || p >= int32(len(e.Replicas)) {
		return nil
	}
	return notIn(e.Replicas[p], m.Target)
}

func notIn(a, b []int32) []int32 {
	var out []int32
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func (e TopicEntry) validateMoves() error {
	if len(e.Moves) > int(e.Partitions) {
		return fmt.Errorf("topic %s: %d moves for %d partitions", e.Name, len(e.Moves), e.Partitions)
	}
	if len(e.Pinned) > int(e.Partitions) {
		return fmt.Errorf("topic %s: %d pinned partitions of %d", e.Name, len(e.Pinned), e.Partitions)
	}
	for i, p := range e.Pinned {
		if p < 0 || p >= e.Partitions || (i > 0 && p <= e.Pinned[i-1]) {
			return fmt.Errorf("topic %s: pinned partitions not ascending partitions of %d", e.Name, e.Partitions)
		}
	}
	for i, m := range e.Moves {
		if m.Partition < 0 || m.Partition >= e.Partitions {
			return fmt.Errorf("topic %s: move of partition %d of %d", e.Name, m.Partition, e.Partitions)
		}
		if i > 0 && m.Partition <= e.Moves[i-1].Partition {
			return fmt.Errorf("topic %s: moves not in ascending partition order", e.Name)
		}
		if err := validReplicaList(m.Target); err != nil {
			return fmt.Errorf("topic %s partition %d: target: %w", e.Name, m.Partition, err)
		}
	}
	return nil
}

func validReplicaList(rs []int32) error {
	if len(rs) == 0 || len(rs) > MaxReplicationFactor {
		return fmt.Errorf("%w: %d replicas, want 1..%d", ErrMove, len(rs), MaxReplicationFactor)
	}
	for i, b := range rs {
		if b < 0 {
			return fmt.Errorf("%w: negative broker id %d", ErrMove, b)
		}
		if slices.Contains(rs[:i], b) {
			return fmt.Errorf("%w: broker %d listed twice", ErrMove, b)
		}
	}
	return nil
}

// SetMove is the AlterTopic change that starts (or retargets) partition
// p's move to target, an operator's (the partition is pinned from then on:
// automatic rebalancing leaves it), whose brokers must be in the roster; a target equal
// to the replica list cancels a move (the leader rolls back to it first,
// then ends it: EndMove). Only replica sets of one size move within a
// topic: the replication factor stays.
func (a *Agent) SetMove(p int32, target []int32) func(*TopicEntry) error {
	return func(e *TopicEntry) error {
		if p < 0 || p >= e.Partitions {
			return fmt.Errorf("%w: partition %d of %d", ErrMove, p, e.Partitions)
		}
		if err := validReplicaList(target); err != nil {
			return err
		}
		if len(target) > int(e.ReplicationFactor) {
			return fmt.Errorf("%w: %d replicas, the topic's factor is %d", ErrMove, len(target), e.ReplicationFactor)
		}
		roster := a.roster.IDs()
		for _, b := range target {
			if !slices.Contains(roster, b) {
				return fmt.Errorf("%w: broker %d is not in the roster", ErrMove, b)
			}
		}
		if i, ok := slices.BinarySearch(e.Pinned, p); !ok {
			e.Pinned = slices.Insert(e.Pinned, i, p) // an operator's choice from now on
		}
		m := PartitionMove{Partition: p, Target: slices.Clone(target), Started: time.Now().UnixMilli()}
		i, ok := slices.BinarySearchFunc(e.Moves, p, func(m PartitionMove, p int32) int { return int(m.Partition - p) })
		switch {
		case ok:
			m.Started = e.Moves[i].Started
			e.Moves[i] = m
		case slices.Equal(target, e.Replicas[p]):
			return nil // nothing moving, nothing to cancel
		default:
			e.Moves = slices.Insert(e.Moves, i, m)
		}
		return nil
	}
}

// CancelMove is the AlterTopic change that cancels partition p's move, an
// operator's (the partition stays pinned): the target becomes the replica
// list, which the leader rolls the group back to, then ends (EndMove). It
// is decided on the entry it changes, not on the caller's view of it:
// when that entry has no move (it ended, or was cancelled, meanwhile) it
// changes nothing. SetMove with the replica list the caller saw would, on
// an entry whose move had ended, start a move back from where it ended.
func CancelMove(p int32) func(*TopicEntry) error {
	return func(e *TopicEntry) error {
		if p < 0 || p >= e.Partitions {
			return fmt.Errorf("%w: partition %d of %d", ErrMove, p, e.Partitions)
		}
		i, ok := slices.BinarySearchFunc(e.Moves, p, func(m PartitionMove, p int32) int { return int(m.Partition - p) })
		if !ok {
			return nil
		}
		e.Moves[i].Target = slices.Clone(e.Replicas[p])
		if j, ok := slices.BinarySearch(e.Pinned, p); !ok {
			e.Pinned = slices.Insert(e.Pinned, j, p)
		}
		return nil
	}
}

// EndMove is the AlterTopic change the partition's leader makes once the
// group's voters are final: they become partition p's replica list, in
// the target's order, and the move is gone. final must be the move's
// target (ErrTopicChanged otherwise: the target moved meanwhile).
func EndMove(p int32, final []int32) func(*TopicEntry) error {
	return func(e *TopicEntry) error {
		if p < 0 || p >= e.Partitions {
			return fmt.Errorf("%w: partition %d of %d", ErrMove, p, e.Partitions)
		}
		i, ok := slices.BinarySearchFunc(e.Moves, p, func(m PartitionMove, p int32) int { return int(m.Partition - p) })
		if !ok || !slices.Equal(e.Moves[i].Target, final) {
			return fmt.Errorf("end move of partition %d: %w", p, ErrTopicChanged)
		}
		e.Replicas[p] = slices.Clone(final)
		e.Moves = slices.Delete(e.Moves, i, i+1)
		if len(e.Moves) == 0 {
			e.Moves = nil
		}
		return nil
	}
}

// MovingTopics are the live topics with a move under way, by name: what
// the reassignment driver looks at, without copying the rest of the
// catalog.
func (a *Agent) MovingTopics() []TopicEntry { return a.catalog.moving() }

func (c *Catalog) moving() []TopicEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []TopicEntry
	for _, e := range c.topics {
		if len(e.Moves) > 0 && !e.Deleted {
			out = append(out, e.clone())
		}
	}
	slices.SortFunc(out, func(a, b TopicEntry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ErrPinned refuses an automatic move of a partition an operator placed,
// or one already moving.
var ErrPinned = errors.New("partition pinned or already moving")

// IsPinned tells whether partition p's replicas are an operator's choice.
func (e TopicEntry) IsPinned(p int32) bool {
	_, ok := slices.BinarySearch(e.Pinned, p)
	return ok
}

// AutoMove is the AlterTopic change automatic rebalancing makes: partition
// p moves to target unless it is pinned or already moving (ErrPinned),
// and stays unpinned.
func (a *Agent) AutoMove(p int32, target []int32) func(*TopicEntry) error {
	set := a.SetMove(p, target)
	return func(e *TopicEntry) error {
		if p < 0 || p >= e.Partitions {
			return fmt.Errorf("%w: partition %d of %d", ErrMove, p, e.Partitions)
		}
		if _, moving := e.Move(p); moving || e.IsPinned(p) {
			return fmt.Errorf("move partition %d: %w", p, ErrPinned)
		}
		if err := set(e); err != nil {
			return err
		}
		i, _ := slices.BinarySearch(e.Pinned, p)
		e.Pinned = slices.Delete(e.Pinned, i, i+1)
		if len(e.Pinned) == 0 {
			e.Pinned = nil
		}
		return nil
	}
}

// AdoptReplicas is the AlterTopic change that records voters as partition
// p's replica list when no move is recorded: the group's configuration
// differs from the catalog, which lost a move (node/moves: heal.go heals
// it). A move recorded meanwhile wins (ErrTopicChanged).
func AdoptReplicas(p int32, voters []int32) func(*TopicEntry) error {
	return func(e *TopicEntry) error {
		if p < 0 || p >= e.Partitions {
			return fmt.Errorf("%w: partition %d of %d", ErrMove, p, e.Partitions)
		}
		if _, moving := e.Move(p); moving {
			return fmt.Errorf("adopt replicas of partition %d: %w", p, ErrTopicChanged)
		}
		if err := validReplicaList(voters); err != nil {
			return err
		}
		e.Replicas[p] = slices.Clone(voters)
		return nil
	}
}
