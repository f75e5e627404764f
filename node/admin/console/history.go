package console

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// PartitionPoint is one sample of a partition, as JSON an array:
// [unix ms, log start, high watermark, bytes, produced records/s,
// produced bytes/s, fetched bytes/s].
type PartitionPoint [7]float64

// CommitPoint is one sample of a group's committed offset on a partition,
// or (in the merged state) of its lag: [unix ms, offset or lag].
type CommitPoint [2]float64

func partitionAt(p PartitionPoint) int64 { return int64(p[0]) }
func commitAt(p CommitPoint) int64       { return int64(p[0]) }

type topicPartition struct {
	topic     string
	partition int32
}

type groupPartition struct {
	group string
	topicPartition
}

// partitionSeries is a led partition's points and the counters of its last
// sample, from which the next one's rates are taken.
type partitionSeries struct {
	points ring[PartitionPoint]
	prev   PartitionSample
	prevAt time.Time
}

// History is the sampled recent past of this node's led partitions and
// coordinated groups: bounded, and kept only while someone reads it.
type History struct {
	cfg Config
	// on mirrors running for the node's hot paths (Sampling), which must
	// not take mu.
	on atomic.Bool

	mu       sync.Mutex
	running  bool      // a sampler goroutine is on
	lastRead time.Time // the last Local, for the idle stop
	parts    map[topicPartition]*partitionSeries
	groups   []GroupSample // the newest description of each
	groupsN  int           // how many this node coordinates, described or not
	commits  map[groupPartition]*ring[CommitPoint]
	samples  int // taken since the sampler started, for tests
}

// NewHistory is an empty history; nothing runs until the first read.
func NewHistory(cfg Config) *History {
	return &History{cfg: cfg, parts: map[topicPartition]*partitionSeries{}, commits: map[groupPartition]*ring[CommitPoint]{}}
}

// touch records a read and starts the sampler if it is off; the first
// sample is taken before touch returns, so that the first read shows where
// things stand.
func (h *History) touch(now time.Time) {
	h.mu.Lock()
	h.lastRead = now
	start := !h.running
	h.running = true
	h.on.Store(true)
	h.mu.Unlock()
	if start {
		h.sample(now)
		go h.run()
	}
}

// run samples every Interval until nobody has read for IdleStop or the
// node closes; then it drops what it kept.
func (h *History) run() {
	t := time.NewTicker(h.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-h.cfg.Closing:
			h.stop()
			return
		case now := <-t.C:
			h.mu.Lock()
			idle := now.Sub(h.lastRead) > h.cfg.IdleStop
			h.mu.Unlock()
			if idle {
				h.stop()
				return
			}
			h.sample(now)
		}
	}
}

func (h *History) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running = false
	h.on.Store(false)
	h.parts = map[topicPartition]*partitionSeries{}
	h.commits = map[groupPartition]*ring[CommitPoint]{}
	h.groups, h.groupsN = nil, 0
}

// Running reports whether the sampler is on.
func (h *History) Running() bool { return h.on.Load() }

// rate is the growth of a counter per second; a counter that went back
// (the partition was reopened here) counts as no growth.
func rate(now, prev int64, dt float64) float64 {
	if dt <= 0 || now < prev {
		return 0
	}
	return math.Round(float64(now-prev)/dt*100) / 100
}

// sample takes one point of everything the Source reports. The Source is
// asked without h.mu held: it takes the node's own locks.
func (h *History) sample(now time.Time) {
	parts := h.cfg.Source.Partitions()
	groups, groupsN := h.cfg.Source.Groups(h.cfg.MaxGroups)
	ms := float64(now.UnixMilli())
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.running {
		return // stopped meanwhile: keep nothing
	}
	h.samples++
	series := len(h.parts) + len(h.commits)
	for _, p := range parts {
		key := topicPartition{p.Topic, p.Partition}
		s := h.parts[key]
		if s == nil {
			if series >= h.cfg.MaxSeries {
				continue
			}
			series++
			s = &partitionSeries{}
			h.parts[key] = s
		}
		var in, inBytes, out float64
		if !s.prevAt.IsZero() {
			dt := now.Sub(s.prevAt).Seconds()
			in = rate(p.ProducedRecords, s.prev.ProducedRecords, dt)
			inBytes = rate(p.ProducedBytes, s.prev.ProducedBytes, dt)
			out = rate(p.FetchedBytes, s.prev.FetchedBytes, dt)
		}
		s.prev, s.prevAt = p, now
		s.points.add(PartitionPoint{ms, float64(p.Start), float64(p.End), float64(p.Bytes), in, inBytes, out}, h.cfg.Keep)
	}
	h.groups, h.groupsN = groups, groupsN
	for _, g := range groups {
		for _, c := range g.Committed {
			key := groupPartition{g.Group, topicPartition{c.Topic, c.Partition}}
			r := h.commits[key]
			if r == nil {
				if series >= h.cfg.MaxSeries {
					continue
				}
				series++
				r = &ring[CommitPoint]{}
				h.commits[key] = r
			}
			r.add(CommitPoint{ms, float64(c.Offset)}, h.cfg.Keep)
		}
	}
	// A series no longer sampled (leadership moved, group deleted) goes
	// once its newest point is older than the span the charts show.
	horizon := ms - float64(h.cfg.Keep)*float64(h.cfg.Interval.Milliseconds())
	for k, s := range h.parts {
		if last, ok := s.points.last(); !ok || last[0] < horizon {
			delete(h.parts, k)
		}
	}
	for k, r := range h.commits {
		if last, ok := r.last(); !ok || last[0] < horizon {
			delete(h.commits, k)
		}
	}
}

// Local is this node's part of the console's state: the series of the
// partitions it led and the groups it coordinates, from a given time on.
type Local struct {
	Node       int32             `json:"node"`
	Now        int64             `json:"now"` // unix ms
	IntervalMs int64             `json:"interval_ms"`
	Keep       int               `json:"keep"`
	Partitions []PartitionSeries `json:"partitions"`
	Groups     []LocalGroup      `json:"groups"`
	// GroupsTotal is how many groups the node coordinates; more than
	// len(Groups) when Config.MaxGroups left some out.
	GroupsTotal int `json:"groups_total"`
}

// PartitionSeries is one partition's points, oldest first.
type PartitionSeries struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Leader is the broker whose samples these are (the merged state's).
	Leader int32            `json:"leader"`
	Points []PartitionPoint `json:"points"`
}

// LocalGroup is a group as its coordinator describes it, with its
// committed offsets' recent past.
type LocalGroup struct {
	GroupSample
	History []CommitSeries `json:"history"`
}

// CommitSeries is a group's committed offsets (or lag) on one partition.
type CommitSeries struct {
	Topic     string        `json:"topic"`
	Partition int32         `json:"partition"`
	Points    []CommitPoint `json:"points"`
}

// Local is what the history holds as q asks (Query), each series' newest
// point always included; it counts as a read.
func (h *History) Local(node int32, q Query) Local {
	now := time.Now()
	h.touch(now)
	h.mu.Lock()
	defer h.mu.Unlock()
	out := Local{Node: node, Now: now.UnixMilli(), IntervalMs: h.cfg.Interval.Milliseconds(), Keep: h.cfg.Keep,
		Partitions: []PartitionSeries{}, Groups: []LocalGroup{}, GroupsTotal: h.groupsN}
	for k, s := range h.parts {
		out.Partitions = append(out.Partitions, PartitionSeries{Topic: k.topic, Partition: k.partition, Leader: node, Points: thin(after(&s.points, q.Since, partitionAt), q.MaxPoints)})
	}
	slices.SortFunc(out.Partitions, func(a, b PartitionSeries) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for _, g := range h.groups {
		lg := LocalGroup{GroupSample: g, History: []CommitSeries{}}
		for _, c := range g.Committed {
			if r := h.commits[groupPartition{g.Group, topicPartition{c.Topic, c.Partition}}]; r != nil {
				lg.History = append(lg.History, CommitSeries{Topic: c.Topic, Partition: c.Partition, Points: thin(after(r, q.Since, commitAt), q.MaxPoints)})
			}
		}
		out.Groups = append(out.Groups, lg)
	}
	return out
}
