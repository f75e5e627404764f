package node

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/spool-log/spool/membership"
)

// A partition's first leader records in the catalog that the partition has
// had a leader (membership's topic_led.go), so that a replica which later
// opens with no Raft state, its disk replaced, rejoins without a vote
// instead of starting the group afresh (openPartition). The record is
// written within a leadership scan of the first election; a replica whose
// disk is lost before it spreads (within seconds of the partition's
// creation) can still start as a voter, and so can every replica while a
// node of the previous version is live (it drops the marks).

const (
	// ledMarkGap spaces this node's catalog writes of marks: after a
	// burst of first elections (a topic of thousands of partitions
	// created) the marks go out in a few writes, not one a scan.
	ledMarkGap = 500 * time.Millisecond
	// ledMarkTopics bounds the topics one write marks (each is spread
	// whole): after an upgrade every topic lacks marks, and the rest wait
	// for the next writes.
	ledMarkTopics = 64
)

type ledMarks struct {
	last    atomic.Int64 // unix nanoseconds of the last write
	pending atomic.Bool  // a scan is scheduled for after the gap
}

// markLed records the partitions among leading, which this node's replicas
// lead, that the catalog does not yet mark led, in one catalog write.
func (n *Node) markLed(leading []*localPartition) {
	if since := time.Since(time.Unix(0, n.led.last.Load())); since < ledMarkGap {
		n.markLedLater(ledMarkGap - since)
		return
	}
	byTopic := map[string][]*localPartition{}
	for _, p := range leading {
		byTopic[p.Topic] = append(byTopic[p.Topic], p)
	}
	var marks []membership.LedMark
	for name, ps := range byTopic {
		id, led, ok := n.agent.TopicLed(name)
		if !ok {
			continue
		}
		have := membership.TopicEntry{Led: led}
		m := membership.LedMark{Name: name, ID: id}
		for _, p := range ps {
			if TopicID(id) == p.TopicID && !have.HasLed(p.Index) {
				m.Partitions = append(m.Partitions, p.Index)
			}
		}
		if len(m.Partitions) == 0 {
			continue
		}
		if len(marks) == ledMarkTopics {
			n.markLedLater(ledMarkGap)
			break
		}
		marks = append(marks, m)
	}
	if len(marks) == 0 {
		return
	}
	n.led.last.Store(time.Now().UnixNano())
	err := n.agent.MarkLed(marks)
	switch {
	case errors.Is(err, membership.ErrMixedVersions):
		n.log.WithError(err).Debug("not recording the partitions' first leaders while older nodes are live")
	case err != nil:
		n.log.WithError(err).Warn("recording the partitions' first leaders; the next scan retries")
	}
}

// markLedLater has the leadership scan run again after d, once.
func (n *Node) markLedLater(d time.Duration) {
	if n.led.pending.CompareAndSwap(false, true) {
		time.AfterFunc(d, func() {
			n.led.pending.Store(false)
			n.leadershipChanged()
		})
	}
}
