package topics

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
)

// A partition's first leader records in the catalog that the partition has
// had a leader (membership's topic_led.go), so that a replica which later
// opens with no Raft state, its disk replaced, rejoins without a vote
// instead of starting the group afresh (the node's openPartition). The record is
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

// LedRecorder is what LedMarks asks of the membership agent.
type LedRecorder interface {
	TopicLed(name string) (TopicID, []membership.LedRun, bool)
	MarkLed(marks []membership.LedMark) error
}

// LedPartition is a partition led here, of the topic of that name and id.
type LedPartition struct {
	Topic string
	ID    TopicID
	Index int32
}

// LedMarks writes this node's marks of first leaders into the catalog,
// spaced by ledMarkGap.
type LedMarks struct {
	agent  func() LedRecorder
	rescan func() // the leadership scan, asked to run again
	log    logrus.FieldLogger
	last   atomic.Int64 // unix nanoseconds of the last write
	// pending: a scan is scheduled for after the gap.
	pending atomic.Bool
}

// NewLedMarks writes marks through agent (asked at each write) and, where
// it must wait, has rescan run later, once, to give it the partitions
// again.
func NewLedMarks(agent func() LedRecorder, rescan func(), log logrus.FieldLogger) *LedMarks {
	return &LedMarks{agent: agent, rescan: rescan, log: log}
}

// Mark records the partitions among leading, which this node's replicas
// lead, that the catalog does not yet mark led, in one catalog write.
func (l *LedMarks) Mark(leading []LedPartition) {
	if since := time.Since(time.Unix(0, l.last.Load())); since < ledMarkGap {
		l.markLater(ledMarkGap - since)
		return
	}
	agent := l.agent()
	byTopic := map[string][]LedPartition{}
	for _, p := range leading {
		byTopic[p.Topic] = append(byTopic[p.Topic], p)
	}
	var marks []membership.LedMark
	for name, ps := range byTopic {
		id, led, ok := agent.TopicLed(name)
		if !ok {
			continue
		}
		have := membership.TopicEntry{Led: led}
		m := membership.LedMark{Name: name, ID: id}
		for _, p := range ps {
			if id == p.ID && !have.HasLed(p.Index) {
				m.Partitions = append(m.Partitions, p.Index)
			}
		}
		if len(m.Partitions) == 0 {
			continue
		}
		if len(marks) == ledMarkTopics {
			l.markLater(ledMarkGap)
			break
		}
		marks = append(marks, m)
	}
	if len(marks) == 0 {
		return
	}
	l.last.Store(time.Now().UnixNano())
	err := agent.MarkLed(marks)
	switch {
	case errors.Is(err, membership.ErrMixedVersions):
		l.log.WithError(err).Debug("not recording the partitions' first leaders while older nodes are live")
	case err != nil:
		l.log.WithError(err).Warn("recording the partitions' first leaders; the next scan retries")
	}
}

// markLater has the leadership scan run again after d, once.
func (l *LedMarks) markLater(d time.Duration) {
	if l.pending.CompareAndSwap(false, true) {
		time.AfterFunc(d, func() {
			l.pending.Store(false)
			l.rescan()
		})
	}
}
