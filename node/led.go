package node

import (
	"sync/atomic"
	"time"
)

// A partition's first leader records in the catalog that the partition has
// had a leader (membership's topic_led.go), so that a replica which later
// opens with no Raft state, its disk replaced, rejoins without a vote
// instead of starting the group afresh (openPartition). The record is
// written within a leadership scan of the first election; a replica whose
// disk is lost before it spreads (within seconds of the partition's
// creation) can still start as a voter.

// ledMarkGap spaces this node's catalog writes of marks: after a burst of
// first elections (a topic of thousands of partitions created) the marks go
// out in a few writes, not one a scan.
const ledMarkGap = 500 * time.Millisecond

type ledMarks struct {
	last    atomic.Int64 // unix nanoseconds of the last write
	pending atomic.Bool  // a scan is scheduled for after the gap
}

// markLed records the partitions among leading, which this node's replicas
// lead, that the catalog does not yet mark led, one catalog write per
// topic. A partition seen marked is not looked at again.
func (n *Node) markLed(leading []*localPartition) {
	if since := time.Since(time.Unix(0, n.led.last.Load())); since < ledMarkGap {
		if n.led.pending.CompareAndSwap(false, true) {
			time.AfterFunc(ledMarkGap-since, func() {
				n.led.pending.Store(false)
				n.leadershipChanged()
			})
		}
		return
	}
	byTopic := map[string][]*localPartition{}
	for _, p := range leading {
		if !p.ledMarked.Load() {
			byTopic[p.topic] = append(byTopic[p.topic], p)
		}
	}
	for name, ps := range byTopic {
		e, ok := n.agent.Topic(name)
		if !ok {
			continue
		}
		var mark []int32
		for _, p := range ps {
			switch {
			case TopicID(e.ID) != p.topicID:
			case e.HasLed(p.index):
				p.ledMarked.Store(true)
			default:
				mark = append(mark, p.index)
			}
		}
		if len(mark) == 0 {
			continue
		}
		n.led.last.Store(time.Now().UnixNano())
		if err := n.agent.MarkLed(name, e.ID, mark); err != nil {
			n.log.WithError(err).WithField("topic", name).Warn("recording the partitions' first leaders; the next scan retries")
		}
	}
}
