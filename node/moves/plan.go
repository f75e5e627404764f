// Package moves owns partition moves: reassignments, drains and automatic
// rebalancing. Planning (plan.go: Drain, Rebalance) is pure functions of
// the topic catalog, the roster and liveness, with no I/O and no state, so
// that each rule is a row in a table test. Carrying a plan out is a
// Mover's: it records each move in the catalog, bounded by how many are
// under way (starts.go), and on the partition's leader adds and removes
// replicas step by step (step.go), heals groups the catalog lost track of
// (heal.go), tells reconcile whether a replica's group still counts it
// (voting.go), and reports progress (status.go, metrics.go). CockroachDB's
// allocator is the model: the decision apart from its execution.
//
// It knows the node only through the interfaces of mover.go (Cluster,
// Replica) and Config's functions. It holds no lock: the Mover's one piece
// of state (StillVoting's) is guarded by the caller's, the partition set's
// plan lock; nothing is held while it calls out.
package moves

import (
	"cmp"
	"slices"

	"github.com/spool-log/spool/membership"
)

// View is what a plan is made from.
type View struct {
	Topics []membership.TopicEntry
	// Roster is the persisted set of brokers placement hashes over.
	Roster []int32
	// Alive tells the brokers gossip sees alive.
	Alive func(broker int32) bool
	// Draining are the brokers whose replicas move off: an operator's
	// drain, or a broker removed from the roster that a replica list
	// still names.
	Draining map[int32]bool
	// Size is what this node knows of a partition's bytes (0: unknown);
	// nil counts every partition as empty.
	Size func(topic string, id membership.TopicID, partition int32) int64
}

// Move is one partition's move to Target, its replicas in order.
type Move struct {
	Topic     string
	Partition int32
	Target    []int32
	Bytes     int64
}

func (v View) size(e membership.TopicEntry, p int32) int64 {
	if v.Size == nil {
		return 0
	}
	return v.Size(e.Name, e.ID, p)
}

// biggestFirst orders moves by Bytes, the biggest first, stable otherwise.
func biggestFirst(ms []Move) []Move {
	slices.SortStableFunc(ms, func(a, b Move) int { return cmp.Compare(b.Bytes, a.Bytes) })
	return ms
}

// Rebalance is the moves that bring each partition to where placement over
// the roster puts it now, the biggest first. Left out: single copies and
// even factors (served as they are), factors above the roster, pinned
// partitions, partitions moving already, a change of order only (no
// leadership churns for it), a partition without a live majority (no
// leader to carry the move out, which would hold a slot for good) or with
// a draining replica (Drain's, by the smaller change), and a target with a
// broker down (it would hold a slot until the broker came back).
func Rebalance(v View) []Move {
	var out []Move
	for _, e := range v.Topics {
		if e.ReplicationFactor < 2 || int(e.ReplicationFactor) > len(v.Roster) || e.ReplicationFactor%2 == 0 {
			continue
		}
		pl := membership.PlaceTopic(e.Name, e.Partitions, v.Roster, int(e.ReplicationFactor))
		for p := range e.Partitions {
			if e.IsPinned(p) {
				continue
			}
			if _, moving := e.Move(p); moving {
				continue
			}
			want, cur := pl[p], e.Replicas[p]
			if len(want) != len(cur) || len(cur) < 2 || sameSet(want, cur) {
				continue
			}
			if !LiveMajority(cur, v.Alive) || slices.ContainsFunc(cur, func(b int32) bool { return v.Draining[b] }) {
				continue
			}
			if slices.ContainsFunc(want, func(b int32) bool { return !v.Alive(b) }) {
				continue
			}
			out = append(out, Move{Topic: e.Name, Partition: p, Target: want, Bytes: v.size(e, p)})
		}
	}
	return biggestFirst(out)
}

// Drain is the moves of the draining brokers' replicas to others, the
// biggest first: each draining broker of a partition is replaced by the
// next live broker placement prefers for it (DrainTarget). Left out:
// single copies (they cannot move), partitions moving already (the move
// ends first, then moves off the drained broker: retargeted after a
// promotion, the drained broker would be a voter no list names), and
// partitions without a live majority now or in the target.
func Drain(v View) []Move {
	if len(v.Draining) == 0 {
		return nil
	}
	var out []Move
	for _, e := range v.Topics {
		var placed [][]int32
		for p := range e.Partitions {
			if int(p) >= len(e.Replicas) || len(e.Replicas[p]) < 2 {
				continue
			}
			if _, moving := e.Move(p); moving {
				continue
			}
			cur := e.Replicas[p]
			if !slices.ContainsFunc(cur, func(b int32) bool { return v.Draining[b] }) {
				continue
			}
			if placed == nil {
				placed = membership.PlaceTopic(e.Name, e.Partitions, v.Roster, min(int(e.ReplicationFactor), len(v.Roster)))
			}
			target := DrainTarget(e.Name, p, cur, placed[p], v.Roster, v.Draining, v.Alive)
			if target == nil || !LiveMajority(cur, v.Alive) || !LiveMajority(target, v.Alive) {
				continue
			}
			out = append(out, Move{Topic: e.Name, Partition: p, Target: target, Bytes: v.size(e, p)})
		}
	}
	return biggestFirst(out)
}

// DrainTarget is base with each draining broker replaced by the next live
// broker of the roster placement prefers for the partition (the topic's
// placement, then plain rendezvous order) that base does not hold; nil
// when there is none.
func DrainTarget(topic string, p int32, base, placed, roster []int32, draining map[int32]bool, alive func(int32) bool) []int32 {
	prefs := slices.Concat(placed, membership.Place(topic, p, roster, len(roster)))
	target := slices.Clone(base)
	for i, b := range target {
		if !draining[b] {
			continue
		}
		j := slices.IndexFunc(prefs, func(c int32) bool {
			return !draining[c] && !slices.Contains(target, c) && alive(c)
		})
		if j < 0 {
			return nil
		}
		target[i] = prefs[j]
	}
	return target
}

// LiveMajority tells whether a majority of replicas are alive: a group
// whose leader can commit a configuration change.
func LiveMajority(replicas []int32, alive func(int32) bool) bool {
	live := 0
	for _, b := range replicas {
		if alive(b) {
			live++
		}
	}
	return live > len(replicas)/2
}

// sameSet tells whether a and b hold the same brokers, in any order.
func sameSet(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
