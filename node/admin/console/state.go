package console

import (
	"cmp"
	"slices"
	"sort"
)

// State is the cluster-wide console state the page reads at
// /v1/console/state: every live broker's Local merged.
type State struct {
	Now        int64 `json:"now"` // unix ms, the answering node's clock
	IntervalMs int64 `json:"interval_ms"`
	Keep       int   `json:"keep"`
	// Nodes says which brokers answered (Error empty) and which did not:
	// their partitions and groups are missing from this answer.
	Nodes      []NodeAnswer      `json:"nodes"`
	Partitions []PartitionSeries `json:"partitions"`
	Groups     []GroupState      `json:"groups"`
	// GroupsTotal counts the groups of the brokers that answered, those
	// their MaxGroups left out of Groups included.
	GroupsTotal int `json:"groups_total"`
}

// NodeAnswer is one broker's part in a State.
type NodeAnswer struct {
	ID    int32  `json:"id"`
	Error string `json:"error,omitempty"`
}

// GroupState is a group with its lag, now and over the last minutes.
type GroupState struct {
	GroupSample
	Coordinator int32         `json:"coordinator"`
	Offsets     []GroupOffset `json:"offsets"`
	// TotalLag sums the partitions' known lag.
	TotalLag int64 `json:"total_lag"`
	// Lag is the total lag over time, LagByPartition each partition's.
	Lag            []CommitPoint  `json:"lag"`
	LagByPartition []CommitSeries `json:"lag_by_partition"`
}

// GroupOffset is one partition of a group: committed offset (-1: none),
// the partition's high watermark (-1: its leader did not answer) and the
// lag (-1: unknown). As kadm counts it, an assigned partition without a
// commit lags by what its log holds (end - start).
type GroupOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"`
	End       int64  `json:"end"`
	Lag       int64  `json:"lag"`
	Member    string `json:"member,omitempty"`
}

// Merge is the cluster-wide state from each broker's Local (by id). A
// partition sampled by several brokers (leadership moved) gets all their
// points in time order; a group reported twice (coordination moving)
// keeps the lowest broker id's.
func Merge(now int64, locals map[int32]Local, errs map[int32]string) State {
	st := State{Now: now, Nodes: []NodeAnswer{}, Partitions: []PartitionSeries{}, Groups: []GroupState{}}
	ids := make([]int32, 0, len(locals)+len(errs))
	for id := range locals {
		ids = append(ids, id)
	}
	for id := range errs {
		if _, ok := locals[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	parts := map[topicPartition]*PartitionSeries{}
	var newest = map[topicPartition]float64{}
	groups := map[string]GroupState{}
	for _, id := range ids {
		st.Nodes = append(st.Nodes, NodeAnswer{ID: id, Error: errs[id]})
		l, ok := locals[id]
		if !ok {
			continue
		}
		st.IntervalMs, st.Keep = max(st.IntervalMs, l.IntervalMs), max(st.Keep, l.Keep)
		st.GroupsTotal += max(l.GroupsTotal, len(l.Groups))
		for _, ps := range l.Partitions {
			key := topicPartition{ps.Topic, ps.Partition}
			m := parts[key]
			if m == nil {
				m = &PartitionSeries{Topic: ps.Topic, Partition: ps.Partition, Leader: id}
				parts[key] = m
			}
			m.Points = append(m.Points, ps.Points...)
			if n := len(ps.Points); n > 0 && ps.Points[n-1][0] > newest[key] {
				newest[key], m.Leader = ps.Points[n-1][0], id // the newest sample is the current leader's
			}
		}
		for _, g := range l.Groups {
			if _, dup := groups[g.Group]; dup {
				continue
			}
			groups[g.Group] = GroupState{GroupSample: g.GroupSample, Coordinator: id, LagByPartition: g.History}
		}
	}
	for _, m := range parts {
		slices.SortStableFunc(m.Points, func(a, b PartitionPoint) int { return cmp.Compare(a[0], b[0]) })
		st.Partitions = append(st.Partitions, *m)
	}
	slices.SortFunc(st.Partitions, func(a, b PartitionSeries) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for _, g := range groups {
		st.Groups = append(st.Groups, groupLag(g, parts, st.IntervalMs))
	}
	slices.SortFunc(st.Groups, func(a, b GroupState) int { return cmp.Compare(a.Group, b.Group) })
	return st
}

// endAt is the high watermark ps had at t (unix ms): its newest point no
// later than half an interval after t (brokers sample at their own phase
// of the second), else its oldest; ok is false without points.
func endAt(ps *PartitionSeries, t float64, intervalMs int64) (float64, bool) {
	if ps == nil || len(ps.Points) == 0 {
		return 0, false
	}
	limit := t + float64(intervalMs)/2
	i := sort.Search(len(ps.Points), func(i int) bool { return ps.Points[i][0] > limit })
	if i == 0 {
		return ps.Points[0][2], true
	}
	return ps.Points[i-1][2], true
}

// groupLag fills in g's offsets and lag from the partitions' high
// watermarks.
func groupLag(g GroupState, parts map[topicPartition]*PartitionSeries, intervalMs int64) GroupState {
	member := map[topicPartition]string{}
	for _, m := range g.Members {
		for topic, ps := range m.Assignment {
			for _, p := range ps {
				member[topicPartition{topic, p}] = m.MemberID
			}
		}
	}
	committed := map[topicPartition]int64{}
	for _, c := range g.Committed {
		committed[topicPartition{c.Topic, c.Partition}] = c.Offset
	}
	keys := make([]topicPartition, 0, len(committed)+len(member))
	for k := range committed {
		keys = append(keys, k)
	}
	for k := range member {
		if _, ok := committed[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b topicPartition) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	g.Offsets = []GroupOffset{}
	for _, k := range keys {
		o := GroupOffset{Topic: k.topic, Partition: k.partition, Committed: -1, End: -1, Lag: -1, Member: member[k]}
		c, hasCommit := committed[k]
		if hasCommit {
			o.Committed = c
		}
		if ps := parts[k]; ps != nil && len(ps.Points) > 0 {
			last := ps.Points[len(ps.Points)-1]
			o.End = int64(last[2])
			switch {
			case hasCommit && c >= 0:
				o.Lag = max(o.End-c, 0)
			case o.Member != "":
				o.Lag = max(o.End-int64(last[1]), 0)
			}
		}
		if o.Lag > 0 {
			g.TotalLag += o.Lag
		}
		g.Offsets = append(g.Offsets, o)
	}
	// Lag over time: each committed point against the high watermark of
	// the same moment. The coordinator samples every partition of a group
	// in one pass, so their points share times and sum exactly.
	total := map[float64]float64{}
	var lags []CommitSeries
	for _, cs := range g.LagByPartition {
		ps := parts[topicPartition{cs.Topic, cs.Partition}]
		ls := CommitSeries{Topic: cs.Topic, Partition: cs.Partition, Points: []CommitPoint{}}
		for _, p := range cs.Points {
			end, ok := endAt(ps, p[0], intervalMs)
			if !ok || p[1] < 0 {
				continue
			}
			lag := max(end-p[1], 0)
			ls.Points = append(ls.Points, CommitPoint{p[0], lag})
			total[p[0]] += lag
		}
		lags = append(lags, ls)
	}
	g.LagByPartition = lags
	if g.LagByPartition == nil {
		g.LagByPartition = []CommitSeries{}
	}
	g.Lag = make([]CommitPoint, 0, len(total))
	for t, v := range total {
		g.Lag = append(g.Lag, CommitPoint{t, v})
	}
	slices.SortFunc(g.Lag, func(a, b CommitPoint) int { return cmp.Compare(a[0], b[0]) })
	return g
}
