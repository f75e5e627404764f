package membership

import (
	"fmt"
	"maps"
)

// AlterTopic changes a live topic in place: change edits a copy of its entry
// (partition count and replica lists, configs, moves), and the result
// replaces the entry under the same topic id, stamped with a new tick of
// this node's Lamport clock, then persisted and broadcast like a create.
// Keeping the id is what makes it an alteration rather than a replacement:
// nodes keep the partitions they hold and open the ones added.
//
// The partitions change actually changed (placement, move or pin; every
// added partition) are stamped with the alteration's version, the others
// keep their stamps, and so are the configs when it changed them, so
// alterations of different partitions, or of partitions and configs, made
// concurrently elsewhere all survive the merge (topic_merge.go). Name, id,
// Deleted, Auto, the replication factor, the version and the stamps are not
// change's to set, and the partition count only grows. Of an alteration and
// a concurrent alteration elsewhere, each changed partition goes to the
// newer stamp and the configs, when both changed them, to the newer one; a
// concurrent delete wins over any alteration. If any part of this one lost
// before it was stored, AlterTopic fails with ErrTopicChanged and nothing
// of it spreads.
func (a *Agent) AlterTopic(name string, change func(*TopicEntry) error) (TopicEntry, error) {
	a.opMu.Lock()
	defer a.opMu.Unlock()
	cur, ok := a.catalog.Get(name)
	if !ok || cur.Deleted {
		return TopicEntry{}, fmt.Errorf("alter topic %s: %w", name, ErrUnknownTopic)
	}
	next := cur.clone()
	if err := change(&next); err != nil {
		return TopicEntry{}, fmt.Errorf("alter topic %s: %w", name, err)
	}
	next.Name, next.ID, next.Deleted, next.Auto = cur.Name, cur.ID, false, cur.Auto
	if len(next.Config) == 0 {
		next.Config = nil
	}
	if next.Partitions < cur.Partitions {
		return TopicEntry{}, fmt.Errorf("alter topic %s: %w: the count only grows", name, ErrInvalidPartitions)
	}
	if next.ReplicationFactor != cur.ReplicationFactor {
		return TopicEntry{}, fmt.Errorf("alter topic %s: %w: the factor stays", name, ErrInvalidReplicationFactor)
	}
	next.Lamport, next.Origin = a.catalog.tick(), a.cfg.BrokerID
	changed := stampAlteration(cur, &next)
	if err := next.validate(); err != nil {
		return TopicEntry{}, fmt.Errorf("alter topic: %w", err)
	}
	if _, err := a.mergeCatalog([]TopicEntry{next}, "local"); err != nil {
		return TopicEntry{}, fmt.Errorf("alter topic %s: %w", name, err)
	}
	stored, _ := a.catalog.Get(name)
	if lostAlteration(stored, next, changed, !maps.Equal(cur.Config, next.Config)) {
		return TopicEntry{}, fmt.Errorf("alter topic %s: %w", name, ErrTopicChanged)
	}
	a.broadcastTopic(next)
	return stored, nil
}

// stampAlteration stamps next, cur altered and given its version, in cur's
// incarnation: the partitions whose placement differs from cur's, and those
// cur does not have, with next's version, the others with their stamps in
// cur; the configs with next's version when they differ from cur's, with
// cur's topic-wide stamp otherwise. It returns the partitions it stamped.
func stampAlteration(cur TopicEntry, next *TopicEntry) []int32 {
	v := next.version()
	was := cur.stamps()
	st := make([]Stamp, next.Partitions)
	var changed []int32
	for p := range next.Partitions {
		if p < cur.Partitions && p < int32(len(next.Replicas)) && samePartition(cur, *next, p) {
			st[p] = was[p]
			continue
		}
		st[p] = v
		changed = append(changed, p)
	}
	wide := cur.wide()
	if !maps.Equal(cur.Config, next.Config) {
		wide = v
	}
	next.setStamps(cur.born(), wide, st)
	return changed
}

// lostAlteration tells whether stored, the entry after next was merged,
// lost any part of next: its incarnation, a partition it changed (another
// stamp won it) or, when it changed the configs, them (another topic-wide
// stamp won).
func lostAlteration(stored, next TopicEntry, changed []int32, topicWide bool) bool {
	if compareLineage(stored, next) != 0 || stored.Partitions < next.Partitions {
		return true
	}
	if topicWide && stored.wide() != next.version() {
		return true
	}
	st := stored.stamps()
	for _, p := range changed {
		if st[p] != next.version() {
			return true
		}
	}
	return false
}

// ErrTopicChanged is AlterTopic's answer when a newer version of the topic
// from elsewhere won over the alteration.
var ErrTopicChanged = fmt.Errorf("topic changed concurrently elsewhere")

// GrowPartitions is the AlterTopic change that raises a topic's partition
// count to total. assignment, when given, lists the replicas of each new
// partition (the first leads) and must name roster brokers; otherwise the
// new partitions are placed as a create of total partitions would place
// them (PlaceTopic over the current roster), so a topic grown from N to M
// partitions puts partitions N..M-1 where a topic created with M would.
func (a *Agent) GrowPartitions(total int32, assignment [][]int32) func(*TopicEntry) error {
	return func(e *TopicEntry) error {
		if total <= e.Partitions {
			return fmt.Errorf("%w: topic has %d partitions, asked for %d; the count can only grow", ErrInvalidPartitions, e.Partitions, total)
		}
		if total > MaxPartitions {
			return fmt.Errorf("%w: %d above %d", ErrInvalidPartitions, total, MaxPartitions)
		}
		added := int(total - e.Partitions)
		roster := a.roster.IDs()
		if assignment != nil {
			if len(assignment) != added {
				return fmt.Errorf("%w: %d assignments for %d new partitions", ErrGrowAssignment, len(assignment), added)
			}
			known := make(map[int32]bool, len(roster))
			for _, id := range roster {
				known[id] = true
			}
			for i, rs := range assignment {
				if len(rs) != int(e.ReplicationFactor) {
					return fmt.Errorf("%w: new partition %d has %d replicas, the topic's factor is %d", ErrGrowAssignment, int(e.Partitions)+i, len(rs), e.ReplicationFactor)
				}
				for _, b := range rs {
					if !known[b] {
						return fmt.Errorf("%w: broker %d is not in the roster", ErrGrowAssignment, b)
					}
				}
			}
		} else {
			if int(e.ReplicationFactor) > len(roster) {
				return fmt.Errorf("%w: %d, the roster has %d brokers", ErrInvalidReplicationFactor, e.ReplicationFactor, len(roster))
			}
			assignment = PlaceTopic(e.Name, total, roster, int(e.ReplicationFactor))[e.Partitions:]
		}
		for _, rs := range assignment {
			e.Replicas = append(e.Replicas, append([]int32(nil), rs...))
		}
		e.Partitions = total
		return nil
	}
}

// ErrGrowAssignment refuses explicit replica lists that do not
// fit the topic or the roster.
var ErrGrowAssignment = fmt.Errorf("invalid replica assignment")
