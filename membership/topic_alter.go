package membership

import (
	"fmt"
)

// AlterTopic changes a live topic in place: change edits a copy of its entry
// (partition count and replica lists, configs), and the result replaces the
// entry under the same topic id, stamped with a new tick of this node's
// Lamport clock, then persisted and broadcast like a create. Keeping the id
// is what makes it an alteration rather than a replacement: nodes keep the
// partitions they hold and open the ones added.
//
// Name, id, Deleted, Auto and the version are not change's to set. Of an
// alteration and a concurrent delete or alteration elsewhere, the newer
// Lamport time wins as for any entry; if another version won before this
// one was stored, AlterTopic fails with ErrTopicChanged and nothing of it
// spreads.
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
	if err := next.validate(); err != nil {
		return TopicEntry{}, fmt.Errorf("alter topic: %w", err)
	}
	next.Lamport, next.Origin = a.catalog.tick(), a.cfg.BrokerID
	if _, err := a.mergeCatalog([]TopicEntry{next}, "local"); err != nil {
		return TopicEntry{}, fmt.Errorf("alter topic %s: %w", name, err)
	}
	stored, _ := a.catalog.Get(name)
	if stored.Lamport != next.Lamport || stored.Origin != next.Origin || stored.ID != next.ID {
		return TopicEntry{}, fmt.Errorf("alter topic %s: %w", name, ErrTopicChanged)
	}
	a.broadcastTopic(next)
	return stored, nil
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
