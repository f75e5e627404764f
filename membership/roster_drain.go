package membership

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Draining a broker: before a broker leaves the roster its partitions move
// off it (node/moves: starts.go carries the moves out). The drain is recorded in
// the broker's roster entry, so it is durable and gossiped like the rest of
// the roster and survives the restart of any node, the drained one
// included.
//
// RosterEntry.Drain is a counter merged by max. Its low two bits are the
// state (none, auto, operator, forced), the rest an epoch: starting a drain
// raises the state within the epoch, cancelling one moves to the next
// epoch with no state, so whichever of two concurrent changes sorts higher
// is the one every node keeps:
//
//   - auto: the broker has been down longer than the failed-broker grace
//     (automatic rebalancing); it ends when the broker is back;
//   - operator: spool decommission; once nothing names the broker it is
//     removed from the roster (the tombstone);
//   - forced: likewise, but partitions of replication factor 1, which
//     cannot move, do not hold the removal back (they stay on the broker).
//
// A draining broker is out of Roster(): nothing new is placed on it, and a
// move never targets it.
const (
	drainNone     = 0
	drainAuto     = 1
	drainOperator = 2
	drainForced   = 3
	drainStates   = 4
)

// Draining tells whether the broker is being drained (and not removed).
func (e RosterEntry) Draining() bool { return !e.Decommissioned && e.Drain%drainStates != drainNone }

// DrainAuto tells whether the drain is the failed-broker grace's.
func (e RosterEntry) DrainAuto() bool { return e.Draining() && e.Drain%drainStates == drainAuto }

// DrainForced tells whether the drain removes the broker despite
// partitions of replication factor 1 on it.
func (e RosterEntry) DrainForced() bool { return e.Draining() && e.Drain%drainStates == drainForced }

// drainTo is the Drain value that raises cur to state (never lowers it).
func drainTo(cur uint64, state uint64) uint64 {
	if cur%drainStates >= state {
		return cur
	}
	return cur - cur%drainStates + state
}

// drainEnded is the Drain value that ends whatever drain cur records.
func drainEnded(cur uint64) uint64 {
	if cur%drainStates == drainNone {
		return cur
	}
	return cur - cur%drainStates + drainStates
}

// ErrDrainBlocked refuses a decommission that could not finish: the broker
// holds partitions of replication factor 1.
var ErrDrainBlocked = errors.New("broker holds partitions that cannot move")

// ErrDecommissioned refuses to cancel a decommission that is over.
var ErrDecommissioned = errors.New("broker already removed from the roster")

// Decommission starts draining broker id, alive or down (an operator's
// decision: the failed-broker grace does not apply, and pinned partitions
// move too). Once no partition names it, node/moves (starts.go) removes it from the
// roster. Partitions of replication factor 1 on it have no other replica
// to copy from: without force the decommission is refused
// (ErrDrainBlocked, naming them); with force they stay where they are and
// do not hold the removal back. It changes nothing for a broker already
// removed.
func (a *Agent) Decommission(id int32, force bool) error {
	cur, ok := a.roster.entry(id)
	if !ok {
		return fmt.Errorf("decommission broker %d: %w", id, ErrUnknownBroker)
	}
	if cur.Decommissioned {
		return nil
	}
	state := uint64(drainOperator)
	if force {
		state = drainForced
	} else if single := a.DrainProgress(id).singles(); len(single) > 0 {
		return fmt.Errorf("decommission broker %d: %w: %s have replication factor 1; delete those topics, or decommission with --force to leave them on the broker (unavailable once it is gone)", id, ErrDrainBlocked, strings.Join(single, ", "))
	}
	next := cur
	next.Drain = drainTo(cur.Drain, state)
	if next == cur {
		return nil
	}
	if err := a.RequireFeature(FeatureDrain); err != nil {
		return fmt.Errorf("decommission broker %d: %w", id, err)
	}
	if err := a.persistRoster(next); err != nil {
		return fmt.Errorf("decommission broker %d: %w", id, err)
	}
	a.log.WithField("broker", id).WithField("force", force).Warn("decommission: draining the broker")
	return nil
}

// CancelDecommission stops draining broker id: it is in the roster again.
// Moves under way are ordinary moves and finish; nothing moves back unless
// automatic rebalancing moves it.
func (a *Agent) CancelDecommission(id int32) error {
	cur, ok := a.roster.entry(id)
	if !ok {
		return fmt.Errorf("cancel decommission of broker %d: %w", id, ErrUnknownBroker)
	}
	if cur.Decommissioned {
		return fmt.Errorf("cancel decommission of broker %d: %w; start it again to bring it back", id, ErrDecommissioned)
	}
	return a.setDrain(id, drainEnded(cur.Drain), "decommission cancelled: the broker is in the roster again")
}

// AutoDrain starts draining broker id, down longer than the failed-broker
// grace; a drain already recorded stays as it is. Refused
// (ErrMixedVersions) while a live node cannot read a drain.
func (a *Agent) AutoDrain(id int32) error {
	cur, ok := a.roster.entry(id)
	if !ok || cur.Decommissioned || drainTo(cur.Drain, drainAuto) == cur.Drain {
		return nil
	}
	if err := a.RequireFeature(FeatureDrain); err != nil {
		return fmt.Errorf("drain broker %d: %w", id, err)
	}
	return a.setDrain(id, drainTo(cur.Drain, drainAuto), "failed broker down past its grace: draining it")
}

// EndAutoDrain ends broker id's automatic drain (it is back); an
// operator's drain goes on.
func (a *Agent) EndAutoDrain(id int32) error {
	cur, ok := a.roster.entry(id)
	if !ok || !cur.DrainAuto() {
		return nil
	}
	return a.setDrain(id, drainEnded(cur.Drain), "failed broker back: its automatic drain ends")
}

func (a *Agent) setDrain(id int32, drain uint64, msg string) error {
	cur, _ := a.roster.entry(id)
	if cur.Drain == drain {
		return nil
	}
	cur.Drain = drain
	if err := a.persistRoster(cur); err != nil {
		return fmt.Errorf("drain broker %d: %w", id, err)
	}
	a.log.WithField("broker", id).Warn(msg)
	return nil
}

// FinishDrain removes broker id, an operator's drain, from the roster once
// this node's catalog shows nothing left on it (replication-factor-1
// partitions aside if forced); it reports whether it did. The tombstone
// also ends the drain, so the broker started again (a new generation)
// joins the roster as an empty broker.
func (a *Agent) FinishDrain(id int32) (bool, error) {
	cur, ok := a.roster.entry(id)
	if !ok || !cur.Draining() || cur.DrainAuto() {
		return false, nil
	}
	if !a.DrainProgress(id).Done {
		return false, nil
	}
	cur.Decommissioned = true
	cur.Drain = drainEnded(cur.Drain)
	if err := a.persistRoster(cur); err != nil {
		return false, fmt.Errorf("decommission broker %d: %w", id, err)
	}
	a.log.WithField("decommissioned", id).Warn("broker drained and decommissioned from the roster")
	return true, nil
}

// Decommissioned tells whether broker id was removed from the roster.
func (a *Agent) Decommissioned(id int32) bool {
	e, ok := a.roster.entry(id)
	return ok && e.Decommissioned
}

// DrainingBrokers are the roster's entries being drained, by id.
func (a *Agent) DrainingBrokers() []RosterEntry {
	var out []RosterEntry
	for _, e := range a.roster.Entries() {
		if e.Draining() {
			out = append(out, e)
		}
	}
	return out
}

// DrainStatus is how far a broker's drain stands, in one node's view.
type DrainStatus struct {
	Broker int32 `json:"broker"`
	// State is "draining", "decommissioned" (removed from the roster),
	// "in-roster" (not draining) or "unknown".
	State string `json:"state"`
	// Auto: drained for being down past the failed-broker grace; Forced:
	// partitions that cannot move (replication factor 1, no majority, no
	// broker to take the place) do not hold the removal back.
	Auto   bool `json:"auto,omitempty"`
	Forced bool `json:"forced,omitempty"`
	// Partitions are those whose replica list or move names the broker.
	Partitions []DrainPartition `json:"partitions"`
	Moving     int              `json:"moving"`
	// MovesElsewhere are the moves under way of partitions that do not
	// name the broker, which the removal waits for (DrainProgress).
	MovesElsewhere int `json:"movesElsewhere,omitempty"`
	// Paused: rebalancing is paused cluster-wide, and no drain move
	// starts until it resumes.
	Paused  bool `json:"paused,omitempty"`
	Blocked int  `json:"blocked"`
	// Done: nothing that must move is left (the broker is removed on the
	// next pass of the node that starts moves).
	Done bool `json:"done"`
}

// DrainPartition is one partition left on a drained broker.
type DrainPartition struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	Target    []int32 `json:"target,omitempty"`
	// Blocked says why the partition cannot move, with what to do.
	Blocked string `json:"blocked,omitempty"`
}

// Reasons a partition cannot leave a drained broker.
const (
	BlockedSingleReplica = "replication factor 1: no other replica to copy from; delete the topic, or decommission with --force to leave it behind"
	BlockedNoBroker      = "no broker outside the replica list to take its place; add a broker"
	BlockedNoMajority    = "most of its replicas are down: no leader to carry a move out; start them again, or decommission with --force to remove the broker anyway"
)

func (s DrainStatus) singles() []string {
	var out []string
	for _, p := range s.Partitions {
		if p.Blocked == BlockedSingleReplica {
			out = append(out, fmt.Sprintf("%s/%d", p.Topic, p.Partition))
		}
	}
	return out
}

// DrainProgress is broker id's drain as this node's catalog shows it.
func (a *Agent) DrainProgress(id int32) DrainStatus {
	st := DrainStatus{Broker: id, State: "unknown", Partitions: []DrainPartition{}}
	e, ok := a.roster.entry(id)
	switch {
	case !ok:
	case e.Decommissioned:
		st.State = "decommissioned"
	case e.Draining():
		st.State, st.Auto, st.Forced = "draining", e.DrainAuto(), e.DrainForced()
	default:
		st.State = "in-roster"
	}
	roster := a.roster.IDs()
	st.Paused = a.RebalancePaused()
	st.Done = true
	for _, t := range a.Topics() {
		for p := range t.Partitions {
			if int(p) >= len(t.Replicas) {
				continue
			}
			cur := t.Replicas[p]
			m, moving := t.Move(p)
			if !slices.Contains(cur, id) && !(moving && slices.Contains(m.Target, id)) {
				continue
			}
			dp := DrainPartition{Topic: t.Name, Partition: p, Replicas: slices.Clone(cur)}
			switch {
			case moving:
				dp.Target = slices.Clone(m.Target)
				st.Moving++
			case len(cur) < 2:
				dp.Blocked = BlockedSingleReplica
			case !slices.ContainsFunc(roster, func(b int32) bool { return b != id && !slices.Contains(cur, b) }):
				dp.Blocked = BlockedNoBroker
			case len(slices.DeleteFunc(slices.Clone(cur), func(b int32) bool { return !a.IsAlive(b) })) <= len(cur)/2:
				dp.Blocked = BlockedNoMajority
			}
			if dp.Blocked != "" {
				st.Blocked++
			}
			if dp.Blocked == "" || !st.Forced {
				st.Done = false
			}
			st.Partitions = append(st.Partitions, dp)
		}
	}
	// A move under way may hold the broker as a voter that neither its
	// replica list nor its target names (a move cancelled, or retargeted
	// by an operator, after a promotion): the broker leaves the roster
	// only once every move has ended.
	for _, t := range a.MovingTopics() {
		for _, m := range t.Moves {
			if !slices.Contains(t.Replicas[m.Partition], id) && !slices.Contains(m.Target, id) {
				st.MovesElsewhere++
			}
		}
	}
	if st.MovesElsewhere > 0 {
		st.Done = false
	}
	return st
}

// DrainMove is the AlterTopic change a drain makes: partition p moves to
// target, the replica list with the drained brokers replaced, whether the
// partition is pinned or not (an operator asked for the broker to go; the
// pin stays as it was). A move under way is retargeted only while its
// target is still from, the one the drain saw (a move that does not name
// the drained broker is left to finish); with from nil there must be no
// move. ErrTopicChanged otherwise.
func (a *Agent) DrainMove(p int32, from, target []int32) func(*TopicEntry) error {
	return func(e *TopicEntry) error {
		if p < 0 || p >= e.Partitions || int(p) >= len(e.Replicas) {
			return fmt.Errorf("%w: partition %d of %d", ErrMove, p, e.Partitions)
		}
		if err := validReplicaList(target); err != nil {
			return err
		}
		if len(target) != len(e.Replicas[p]) {
			return fmt.Errorf("%w: %d replicas for a partition of %d", ErrMove, len(target), len(e.Replicas[p]))
		}
		roster := a.roster.IDs()
		for _, b := range target {
			if !slices.Contains(roster, b) && !slices.Contains(e.Replicas[p], b) {
				return fmt.Errorf("%w: broker %d is not in the roster", ErrMove, b)
			}
		}
		i, moving := slices.BinarySearchFunc(e.Moves, p, func(m PartitionMove, p int32) int { return int(m.Partition - p) })
		switch {
		case moving && !slices.Equal(e.Moves[i].Target, from), !moving && from != nil:
			return fmt.Errorf("drain partition %d: %w", p, ErrTopicChanged)
		case moving:
			e.Moves[i].Target = slices.Clone(target)
		default:
			e.Moves = slices.Insert(e.Moves, i, PartitionMove{Partition: p, Target: slices.Clone(target), Started: time.Now().UnixMilli()})
		}
		return nil
	}
}
