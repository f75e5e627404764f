package group

import (
	"maps"
	"slices"
	"time"
)

// clone deep-copies the group's stored state, so that a heartbeat whose
// records fail to append can put the group back as it was. Member timers
// are not carried: rearm starts them again on the restored copy.
func (cg *consumerGroup) clone() *consumerGroup {
	out := &consumerGroup{
		epoch: cg.epoch, assignmentEpoch: cg.assignmentEpoch, assignor: cg.assignor,
		members: make(map[string]*cmember, len(cg.members)),
		target:  make(map[string]tpSet, len(cg.target)),
		topics:  maps.Clone(cg.topics),
	}
	for id, set := range cg.target {
		out.target[id] = maps.Clone(set)
	}
	for id, m := range cg.members {
		out.members[id] = &cmember{
			id: m.id, instanceID: m.instanceID, rackID: m.rackID, clientID: m.clientID, clientHost: m.clientHost,
			epoch: m.epoch, prevEpoch: m.prevEpoch, subscribed: slices.Clone(m.subscribed), assignor: m.assignor,
			regex: m.regex, matched: slices.Clone(m.matched), resolved: m.resolved,
			rebalanceTimeout: m.rebalanceTimeout, assigned: maps.Clone(m.assigned), revoking: maps.Clone(m.revoking),
		}
	}
	return out
}

// rearm starts the session timer of every member, and the revocation
// timer of those still revoking: after a load, or after a failed append
// restored the group, each member gets a whole session to heartbeat in.
func (c *Coordinator) rearm(g *group) {
	for _, m := range g.consumer.members {
		c.scheduleConsumerSession(g, m)
		if len(m.revoking) > 0 {
			c.scheduleRevokeTimeout(g, m)
		}
	}
}

// storeConsumerChange appends the records that turn before into g's
// current consumer state (before nil: the group is new to the log). On a
// failed append it puts before back (restoreState is the classic state to
// go back to) and returns the error: state changes in memory only once
// durable.
func (c *Coordinator) storeConsumerChange(g *group, before *consumerGroup, restoreState State) error {
	recs := consumerRecords(g.id, before, g.consumer)
	err := c.append(g.s, recs)
	if err == nil {
		return nil
	}
	g.logger().WithError(err).WithField("records", len(recs)).Warn("store consumer group change")
	g.consumer.shutdown()
	g.consumer = before
	g.state = restoreState
	if before != nil {
		c.rearm(g)
	}
	return err
}

// consumerRecords are the records for what changed from before to after;
// a member gone is written as tombstones of its three keys, a group gone
// (after nil) as tombstones of its group keys too.
func consumerRecords(groupID string, before, after *consumerGroup) []record {
	var recs []record
	key := func(typ int16, member string) []byte { return cgKey{typ, groupID, member}.encode() }
	if before == nil {
		before = newConsumerGroup()
		before.epoch, before.assignmentEpoch = -1, -1 // write the group records even at epoch 0
	}
	if after == nil {
		for _, id := range slices.Sorted(maps.Keys(before.members)) {
			recs = append(recs, record{key: key(cgCurrentAssignmentType, id)}, record{key: key(cgTargetMemberType, id)}, record{key: key(cgMemberMetadataType, id)})
		}
		return append(recs, record{key: key(cgTargetMetadataType, "")}, record{key: key(cgPartitionMetadataType, "")}, record{key: key(cgMetadataType, "")})
	}
	for _, id := range slices.Sorted(maps.Keys(before.members)) {
		if after.members[id] == nil {
			recs = append(recs, record{key: key(cgCurrentAssignmentType, id)}, record{key: key(cgTargetMemberType, id)}, record{key: key(cgMemberMetadataType, id)})
		}
	}
	ids := slices.Sorted(maps.Keys(after.members))
	for _, id := range ids {
		if v := memberMetaOf(after.members[id]); before.members[id] == nil || !memberMetaEqual(memberMetaOf(before.members[id]), v) {
			recs = append(recs, record{key: key(cgMemberMetadataType, id), value: encodeCGMemberMetadata(v)})
		}
	}
	if !mapsEqual(before.topics, after.topics) || before.epoch == -1 {
		recs = append(recs, record{key: key(cgPartitionMetadataType, ""), value: encodeCGPartitionMetadata(topicsOf(after))})
	}
	if before.epoch != after.epoch {
		recs = append(recs, record{key: key(cgMetadataType, ""), value: encodeCGMetadata(after.epoch)})
	}
	for _, id := range ids {
		if _, had := before.target[id]; !had || !setsEqual(before.target[id], after.target[id]) {
			recs = append(recs, record{key: key(cgTargetMemberType, id), value: encodeCGTargetMember(partsOf(after, after.target[id]))})
		}
	}
	if before.assignmentEpoch != after.assignmentEpoch {
		recs = append(recs, record{key: key(cgTargetMetadataType, ""), value: encodeCGTargetMetadata(after.assignmentEpoch)})
	}
	for _, id := range ids {
		m, o := after.members[id], before.members[id]
		if o == nil || o.epoch != m.epoch || o.prevEpoch != m.prevEpoch || !setsEqual(o.assigned, m.assigned) || !setsEqual(o.revoking, m.revoking) {
			recs = append(recs, record{key: key(cgCurrentAssignmentType, id), value: encodeCGCurrent(currentOf(after, m))})
		}
	}
	return recs
}

func memberMetaOf(m *cmember) cgMemberMeta {
	v := cgMemberMeta{instanceID: m.instanceID, rackID: m.rackID, clientID: m.clientID, clientHost: m.clientHost,
		subscribed: m.subscribed, regex: m.regex, rebalanceTimeoutMs: int32(m.rebalanceTimeout / time.Millisecond)}
	if v.subscribed == nil {
		v.subscribed = []string{}
	}
	if m.assignor != "" {
		v.assignor = &m.assignor
	}
	return v
}

func memberMetaEqual(a, b cgMemberMeta) bool {
	eq := func(x, y *string) bool { return x == nil && y == nil || x != nil && y != nil && *x == *y }
	return eq(a.instanceID, b.instanceID) && eq(a.rackID, b.rackID) && a.clientID == b.clientID && a.clientHost == b.clientHost &&
		slices.Equal(a.subscribed, b.subscribed) && eq(a.regex, b.regex) && a.rebalanceTimeoutMs == b.rebalanceTimeoutMs && eq(a.assignor, b.assignor)
}

func topicsOf(cg *consumerGroup) []cgTopic {
	out := []cgTopic{}
	for _, name := range slices.Sorted(maps.Keys(cg.topics)) {
		out = append(out, cgTopic{id: cg.topics[name].id, name: name, partitions: cg.topics[name].partitions})
	}
	return out
}

// partsOf names set's topics by id, as Kafka's assignment records do; a
// partition of a topic the group no longer knows cannot be named and is
// left out.
func partsOf(cg *consumerGroup, set tpSet) []cgParts {
	byTopic := map[string][]int32{}
	for p := range set {
		byTopic[p.topic] = append(byTopic[p.topic], p.partition)
	}
	out := []cgParts{}
	for _, name := range slices.Sorted(maps.Keys(byTopic)) {
		meta, ok := cg.topics[name]
		if !ok {
			continue
		}
		ps := byTopic[name]
		slices.Sort(ps)
		out = append(out, cgParts{id: meta.id, partitions: ps})
	}
	return out
}

// Kafka's MemberState values as stored in the current assignment record.
const (
	memberStable               = 0
	memberUnrevokedPartitions  = 1
	memberUnreleasedPartitions = 2
)

func currentOf(cg *consumerGroup, m *cmember) cgCurrent {
	st := int8(memberStable)
	switch {
	case len(m.revoking) > 0:
		st = memberUnrevokedPartitions
	case !setsEqual(m.assigned, cg.target[m.id]):
		st = memberUnreleasedPartitions
	}
	return cgCurrent{epoch: m.epoch, prevEpoch: m.prevEpoch, state: st, assigned: partsOf(cg, m.assigned), revoking: partsOf(cg, m.revoking)}
}

// cgLoad gathers one group's consumer records during replay; ids are
// resolved to topic names once every record has been read, since the
// partition metadata record need not come before the assignments.
type cgLoad struct {
	hasEpoch        bool
	epoch           int32
	assignmentEpoch int32
	topics          []cgTopic
	meta            map[string]cgMemberMeta
	target          map[string][]cgParts
	current         map[string]cgCurrent
}

func newCGLoad() *cgLoad {
	return &cgLoad{meta: map[string]cgMemberMeta{}, target: map[string][]cgParts{}, current: map[string]cgCurrent{}}
}

// replayConsumerRecord applies one consumer-group record to loads.
func replayConsumerRecord(loads map[string]*cgLoad, k cgKey, value []byte) error {
	l := loads[k.group]
	if l == nil {
		l = newCGLoad()
		loads[k.group] = l
	}
	var err error
	switch k.typ {
	case cgMetadataType:
		l.hasEpoch = value != nil
		if value != nil {
			l.epoch, err = decodeCGMetadata(value)
		}
	case cgPartitionMetadataType:
		l.topics = nil
		if value != nil {
			l.topics, err = decodeCGPartitionMetadata(value)
		}
	case cgTargetMetadataType:
		l.assignmentEpoch = 0
		if value != nil {
			l.assignmentEpoch, err = decodeCGTargetMetadata(value)
		}
	case cgMemberMetadataType:
		delete(l.meta, k.member)
		if value != nil {
			var m cgMemberMeta
			if m, err = decodeCGMemberMetadata(value); err == nil {
				l.meta[k.member] = m
			}
		}
	case cgTargetMemberType:
		delete(l.target, k.member)
		if value != nil {
			var ps []cgParts
			if ps, err = decodeCGTargetMember(value); err == nil {
				l.target[k.member] = ps
			}
		}
	case cgCurrentAssignmentType:
		delete(l.current, k.member)
		if value != nil {
			var cur cgCurrent
			if cur, err = decodeCGCurrent(value); err == nil {
				l.current[k.member] = cur
			}
		}
	}
	return err
}

// build turns the gathered records into a group, or nil if the group
// record is gone (the group was deleted).
func (l *cgLoad) build(topicName func([16]byte) (string, bool)) *consumerGroup {
	if !l.hasEpoch {
		return nil
	}
	cg := newConsumerGroup()
	cg.epoch, cg.assignmentEpoch = l.epoch, l.assignmentEpoch
	names := map[[16]byte]string{}
	for _, t := range l.topics {
		cg.topics[t.name] = topicMeta{id: t.id, partitions: t.partitions}
		names[t.id] = t.name
	}
	set := func(ps []cgParts) tpSet {
		out := tpSet{}
		for _, p := range ps {
			name, ok := names[p.id]
			if !ok && topicName != nil {
				name, ok = topicName(p.id)
			}
			if !ok {
				continue
			}
			for _, n := range p.partitions {
				out[tp{name, n}] = struct{}{}
			}
		}
		return out
	}
	for id, v := range l.meta {
		m := &cmember{id: id, instanceID: v.instanceID, rackID: v.rackID, clientID: v.clientID, clientHost: v.clientHost,
			subscribed: slices.Clone(v.subscribed), regex: v.regex, rebalanceTimeout: time.Duration(v.rebalanceTimeoutMs) * time.Millisecond,
			assigned: tpSet{}, revoking: tpSet{}}
		if m.subscribed == nil {
			m.subscribed = []string{}
		}
		slices.Sort(m.subscribed)
		if v.assignor != nil {
			m.assignor = *v.assignor
		}
		if cur, ok := l.current[id]; ok {
			m.epoch, m.prevEpoch = cur.epoch, cur.prevEpoch
			m.assigned, m.revoking = set(cur.assigned), set(cur.revoking)
		}
		cg.members[id] = m
		cg.target[id] = set(l.target[id])
	}
	cg.assignor = groupAssignor(cg)
	return cg
}
