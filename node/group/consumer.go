package group

import (
	"cmp"
	"regexp"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A consumer-protocol group (KIP-848) lives in the same shard map as the
// classic groups, as a group whose consumer field is set. The coordinator
// assigns partitions itself:
//
//   - the group epoch advances on every change of membership, of a
//     member's subscription, or of the partition count of a subscribed topic;
//   - the target assignment is recomputed by the group's assignor when the
//     group epoch passes the target assignment epoch;
//   - each member reconciles towards its target one heartbeat at a time: the
//     partitions it must give up are revoked first (its epoch stays until its
//     next heartbeat's owned partitions no longer hold them), then it moves to
//     the target epoch and is given each new partition once no other member
//     holds it, assigned or still revoking.
//
// Every change is written to __consumer_offsets before the heartbeat is
// answered (consumer_records.go, consumer_store.go), so a coordinator that
// loads the partition again knows the members, their epochs and
// assignments, and each member heartbeats on with its id and epoch.

type tp struct {
	topic     string
	partition int32
}

type tpSet map[tp]struct{}

type consumerGroup struct {
	epoch           int32 // the group epoch
	assignmentEpoch int32 // the epoch the target assignment was computed at
	assignor        string
	members         map[string]*cmember
	target          map[string]tpSet
	// topics is the id and partition count of every subscribed topic as
	// of the group epoch; a change bumps the epoch.
	topics map[string]topicMeta
}

type topicMeta struct {
	id         [16]byte
	partitions int32
}

type cmember struct {
	id         string
	instanceID *string
	rackID     *string
	clientID   string
	clientHost string

	epoch, prevEpoch int32
	subscribed       []string
	// regex is the member's SubscribedTopicRegex (nil: none), matched the
	// topics of its last resolution (resolved: done at least once since
	// the member was created or loaded).
	regex            *string
	matched          []string
	resolved         bool
	assignor         string
	rebalanceTimeout time.Duration

	assigned tpSet // the partitions the member owns at its epoch
	revoking tpSet // partitions it must give up before its epoch advances

	sessionTimer Timer
	sessionSeq   uint64
	revokeTimer  Timer
	revokeSeq    uint64
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{members: make(map[string]*cmember), target: make(map[string]tpSet), topics: make(map[string]topicMeta)}
}

// consumerState is the state Kafka's ConsumerGroup reports.
func (g *group) consumerState() string {
	cg := g.consumer
	switch {
	case g.state == Dead:
		return "Dead"
	case len(cg.members) == 0:
		return "Empty"
	case cg.assignmentEpoch != cg.epoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignmentEpoch || len(m.revoking) > 0 || !setsEqual(m.assigned, cg.target[m.id]) {
			return "Reconciling"
		}
	}
	return "Stable"
}

func (cg *consumerGroup) sortedMembers() []*cmember {
	ms := make([]*cmember, 0, len(cg.members))
	for _, m := range cg.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *cmember) int { return cmp.Compare(a.id, b.id) })
	return ms
}

// ConsumerGroupHeartbeat joins, heartbeats in or leaves a consumer-protocol
// group, Kafka's GroupMetadataManager.consumerGroupHeartbeat.
func (c *Coordinator) ConsumerGroupHeartbeat(cl Client, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	fail := func(code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return resp
	}
	switch {
	case req.Group == "":
		return fail(kerr.InvalidRequest.Code, "GroupId can't be empty.")
	case req.MemberEpoch < -2:
		return fail(kerr.InvalidRequest.Code, "MemberEpoch is invalid.")
	case req.MemberEpoch != 0 && req.MemberID == "":
		return fail(kerr.InvalidRequest.Code, "MemberId can't be empty.")
	case req.MemberEpoch == 0 && req.Version >= 1 && req.MemberID == "":
		return fail(kerr.InvalidRequest.Code, "MemberId can't be empty.")
	case req.MemberEpoch == 0 && req.RebalanceTimeoutMillis <= 0:
		return fail(kerr.InvalidRequest.Code, "RebalanceTimeoutMs must be provided in first request.")
	case req.MemberEpoch == 0 && len(req.Topics) > 0:
		return fail(kerr.InvalidRequest.Code, "TopicPartitions must be empty when (re-)joining.")
	case req.MemberEpoch == 0 && req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
		return fail(kerr.InvalidRequest.Code, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		// Go's regexp is RE2, the syntax of Kafka's RE2J.
		if _, err := compileTopicRegex(*req.SubscribedTopicRegex); err != nil {
			return fail(kerr.InvalidRegularExpression.Code, "SubscribedTopicRegex "+*req.SubscribedTopicRegex+" is not a valid regular expression: "+err.Error())
		}
	}
	if req.ServerAssignor != nil && !knownAssignor(*req.ServerAssignor) {
		return fail(kerr.UnsupportedAssignor.Code, "ServerAssignor "+*req.ServerAssignor+" is not supported. Supported assignors: uniform, range.")
	}

	s, code := c.lockShard(req.Group)
	if code != 0 {
		return fail(code, "")
	}
	defer s.mu.Unlock()
	prev := s.groups[req.Group]
	if prev != nil && prev.deleting {
		return fail(kerr.CoordinatorNotAvailable.Code, "")
	}
	var before *consumerGroup
	var prevState State
	if prev != nil {
		prevState = prev.state
		if prev.consumer != nil {
			before = prev.consumer.clone()
		}
	}
	c.consumerHeartbeat(cl, req, s, resp)
	if resp.ErrorCode != 0 {
		return resp
	}
	g := s.groups[req.Group]
	if err := c.storeConsumerChange(g, before, prevState); err != nil {
		if g != prev {
			g.consumer = nil
			if prev != nil {
				s.groups[req.Group] = prev
			} else {
				delete(s.groups, req.Group)
			}
		}
		*resp = *req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		return fail(appendErrorCode(err), "")
	}
	return resp
}

// consumerHeartbeat applies a heartbeat to the group in memory and fills
// resp; the caller stores the change.
func (c *Coordinator) consumerHeartbeat(cl Client, req *kmsg.ConsumerGroupHeartbeatRequest, s *shard, resp *kmsg.ConsumerGroupHeartbeatResponse) *kmsg.ConsumerGroupHeartbeatResponse {
	fail := func(code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return resp
	}
	g := s.groups[req.Group]
	if g != nil && g.consumer == nil {
		if g.state != Empty || len(g.members) > 0 {
			return fail(kerr.GroupIDNotFound.Code, "Group "+req.Group+" is not a consumer group.")
		}
		g.consumer = newConsumerGroup() // an empty classic group keeps its offsets
	}
	if g == nil || g.state == Dead {
		if req.MemberEpoch != 0 {
			return fail(kerr.UnknownMemberID.Code, "")
		}
		g = c.newGroup(s, req.Group)
		g.consumer = newConsumerGroup()
		s.groups[g.id] = g
	}
	cg := g.consumer

	if req.MemberEpoch < 0 {
		m := cg.members[req.MemberID]
		if m == nil {
			return fail(kerr.UnknownMemberID.Code, "")
		}
		g.logger().WithField("member", m.id).Info("consumer member left")
		c.removeConsumerMember(g, m)
		resp.MemberID = kmsg.StringPtr(req.MemberID)
		resp.MemberEpoch = req.MemberEpoch
		return resp
	}

	memberID := req.MemberID
	if memberID == "" {
		memberID = newMemberID(cl.ID, nil)
	}
	m := cg.members[memberID]
	var owned tpSet
	bump := false // the group epoch advances once per heartbeat that changes the group
	switch {
	case req.MemberEpoch == 0:
		if m == nil {
			if c.cfg.MaxGroupSize > 0 && len(cg.members) >= c.cfg.MaxGroupSize {
				return fail(kerr.GroupMaxSizeReached.Code, "")
			}
			m = &cmember{id: memberID, assigned: tpSet{}, revoking: tpSet{}}
			cg.members[m.id] = m
			g.logger().WithField("member", m.id).Info("consumer member joined")
		} else {
			// A rejoin: whatever the member held is released.
			m.assigned, m.revoking = tpSet{}, tpSet{}
			m.epoch, m.prevEpoch = 0, 0
		}
		bump = true
		g.transition(Stable)
		owned = tpSet{}
	case m == nil:
		return fail(kerr.UnknownMemberID.Code, "")
	default:
		owned = c.ownedFrom(req.Topics)
		if req.MemberEpoch != m.epoch && !(req.MemberEpoch == m.prevEpoch && owned != nil && subset(owned, m.assigned)) {
			// The member missed an epoch: it must rejoin.
			return fail(kerr.FencedMemberEpoch.Code, "")
		}
	}

	m.clientID, m.clientHost = cl.ID, cl.Host
	m.instanceID, m.rackID = req.InstanceID, req.RackID
	if req.RebalanceTimeoutMillis > 0 {
		m.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.ServerAssignor != nil {
		m.assignor = *req.ServerAssignor
	}
	if req.SubscribedTopicNames != nil {
		subs := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(subs)
		subs = slices.Compact(subs)
		if !slices.Equal(subs, m.subscribed) {
			m.subscribed = subs
			bump = true
		}
	}
	if req.SubscribedTopicRegex != nil {
		var re *string // "" clears the regex, as Kafka does
		if *req.SubscribedTopicRegex != "" {
			re = kmsg.StringPtr(*req.SubscribedTopicRegex)
		}
		if !eqStringPtr(re, m.regex) {
			m.regex, m.matched, m.resolved = re, nil, false
			bump = true
		}
	}
	if bump {
		cg.epoch++
	}
	c.refreshConsumerGroup(g, bump)

	changed := c.reconcile(g, m, owned)
	c.scheduleConsumerSession(g, m)

	resp.MemberID = kmsg.StringPtr(m.id)
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(c.cfg.ConsumerHeartbeatInterval / time.Millisecond)
	if changed || req.MemberEpoch == 0 || req.Topics != nil {
		resp.Assignment = c.assignmentOf(g, m.assigned)
	}
	return resp
}

// ownedFrom resolves the partitions a heartbeat says its member owns; nil
// (the field left out) means unchanged since the last heartbeat.
func (c *Coordinator) ownedFrom(topics []kmsg.ConsumerGroupHeartbeatRequestTopic) tpSet {
	if topics == nil {
		return nil
	}
	out := tpSet{}
	for _, t := range topics {
		if c.cfg.TopicName == nil {
			break
		}
		name, ok := c.cfg.TopicName(t.TopicID)
		if !ok {
			continue
		}
		for _, p := range t.Partitions {
			out[tp{name, p}] = struct{}{}
		}
	}
	return out
}

// refreshConsumerGroup bumps the group epoch if a subscribed topic appeared,
// vanished or changed its partition count, and recomputes the target
// assignment when the group epoch passed it. bumped says the caller already
// advanced the epoch for this change.
func (c *Coordinator) refreshConsumerGroup(g *group, bumped bool) {
	cg := g.consumer
	if c.resolveRegexes(cg) && !bumped {
		cg.epoch++
		bumped = true
	}
	topics := make(map[string]topicMeta)
	for _, m := range cg.members {
		for _, t := range m.topics() {
			if _, done := topics[t]; done || c.cfg.Topic == nil {
				continue
			}
			if id, n, ok := c.cfg.Topic(t); ok {
				topics[t] = topicMeta{id, n}
			}
		}
	}
	if !mapsEqual(topics, cg.topics) {
		cg.topics = topics
		if !bumped {
			cg.epoch++
		}
	}
	if cg.epoch != cg.assignmentEpoch {
		cg.assignor = groupAssignor(cg)
		cg.target = assign(cg.assignor, cg)
		cg.assignmentEpoch = cg.epoch
		g.logger().WithFields(logrus.Fields{"epoch": cg.epoch, "assignor": cg.assignor, "members": len(cg.members)}).Info("consumer group target assignment computed")
	}
}

// reconcile moves m one step towards its target assignment and reports
// whether its assignment or epoch changed. owned is what the member says it
// owns, nil if it did not say.
func (c *Coordinator) reconcile(g *group, m *cmember, owned tpSet) bool {
	cg := g.consumer
	changed := false
	if len(m.revoking) > 0 && owned != nil {
		for p := range m.revoking {
			if _, still := owned[p]; !still {
				delete(m.revoking, p)
			}
		}
		if len(m.revoking) == 0 {
			m.stopRevokeTimer()
		}
	}
	if len(m.revoking) > 0 {
		return false
	}
	target := cg.target[m.id]
	for p := range m.assigned {
		if _, keep := target[p]; !keep {
			delete(m.assigned, p)
			m.revoking[p] = struct{}{}
		}
	}
	if len(m.revoking) > 0 {
		c.scheduleRevokeTimeout(g, m)
		return true
	}
	if m.epoch != cg.assignmentEpoch {
		m.prevEpoch, m.epoch = m.epoch, cg.assignmentEpoch
		changed = true
	}
	for p := range target {
		if _, have := m.assigned[p]; have || heldByOther(cg, m, p) {
			continue
		}
		m.assigned[p] = struct{}{}
		changed = true
	}
	return changed
}

func heldByOther(cg *consumerGroup, m *cmember, p tp) bool {
	for _, o := range cg.members {
		if o == m {
			continue
		}
		if _, ok := o.assigned[p]; ok {
			return true
		}
		if _, ok := o.revoking[p]; ok {
			return true
		}
	}
	return false
}

func (c *Coordinator) assignmentOf(g *group, set tpSet) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	byTopic := make(map[string][]int32)
	for p := range set {
		byTopic[p.topic] = append(byTopic[p.topic], p.partition)
	}
	names := make([]string, 0, len(byTopic))
	for t := range byTopic {
		names = append(names, t)
	}
	slices.Sort(names)
	for _, t := range names {
		meta, ok := g.consumer.topics[t]
		if !ok {
			continue
		}
		at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		at.TopicID = meta.id
		at.Partitions = byTopic[t]
		slices.Sort(at.Partitions)
		a.Topics = append(a.Topics, at)
	}
	return &a
}

// removeConsumerMember takes m out of its group; its partitions are free
// for the others from their next heartbeat.
func (c *Coordinator) removeConsumerMember(g *group, m *cmember) {
	cg := g.consumer
	m.sessionSeq++
	if m.sessionTimer != nil {
		m.sessionTimer.Stop()
	}
	m.stopRevokeTimer()
	delete(cg.members, m.id)
	delete(cg.target, m.id)
	cg.epoch++
	if len(cg.members) == 0 {
		g.transition(Empty)
	}
	c.refreshConsumerGroup(g, true)
}

// expireConsumerMember removes m on a timer and stores that; if the store
// fails the group stays as it was, every member with a new session.
func (c *Coordinator) expireConsumerMember(g *group, m *cmember) {
	before, state := g.consumer.clone(), g.state
	c.removeConsumerMember(g, m)
	_ = c.storeConsumerChange(g, before, state)
}

// scheduleConsumerSession restarts m's session: a member silent for the
// session timeout is fenced and removed.
func (c *Coordinator) scheduleConsumerSession(g *group, m *cmember) {
	if m.sessionTimer != nil {
		m.sessionTimer.Stop()
	}
	m.sessionSeq++
	seq := m.sessionSeq
	m.sessionTimer = c.after(g.s, c.cfg.ConsumerSessionTimeout, func() {
		if !g.alive() || g.consumer == nil || g.consumer.members[m.id] != m || m.sessionSeq != seq {
			return
		}
		g.logger().WithField("member", m.id).Info("consumer member session expired")
		c.expireConsumerMember(g, m)
	})
}

// scheduleRevokeTimeout fences m if it has not given up its revoked
// partitions within its rebalance timeout, so they cannot stay stuck.
func (c *Coordinator) scheduleRevokeTimeout(g *group, m *cmember) {
	m.stopRevokeTimer()
	seq := m.revokeSeq
	m.revokeTimer = c.after(g.s, m.rebalanceTimeout, func() {
		if !g.alive() || g.consumer == nil || g.consumer.members[m.id] != m || m.revokeSeq != seq || len(m.revoking) == 0 {
			return
		}
		g.logger().WithField("member", m.id).Info("consumer member did not revoke in time")
		c.expireConsumerMember(g, m)
	})
}

func (m *cmember) stopRevokeTimer() {
	m.revokeSeq++
	if m.revokeTimer != nil {
		m.revokeTimer.Stop()
		m.revokeTimer = nil
	}
}

// shutdownConsumer stops every member timer; the group is being unloaded.
func (cg *consumerGroup) shutdown() {
	for _, m := range cg.members {
		m.sessionSeq++
		if m.sessionTimer != nil {
			m.sessionTimer.Stop()
		}
		m.stopRevokeTimer()
	}
}

// checkConsumerMember is Kafka's ConsumerGroup.validateOffsetCommit and
// validateOffsetFetch: a request with epoch < 0 and no member id is an admin
// or standalone request, allowed for commits only while the group is empty;
// otherwise the member must exist at exactly its current epoch.
func (g *group) checkConsumerMember(memberID string, epoch int32, commit bool) int16 {
	cg := g.consumer
	if epoch < 0 && memberID == "" {
		if commit && len(cg.members) > 0 {
			return kerr.UnknownMemberID.Code
		}
		return 0
	}
	m := cg.members[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case epoch > m.epoch:
		return kerr.FencedMemberEpoch.Code
	case epoch < m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

func subset(a, b tpSet) bool {
	for p := range a {
		if _, ok := b[p]; !ok {
			return false
		}
	}
	return true
}

func setsEqual(a, b tpSet) bool { return len(a) == len(b) && subset(a, b) }

func mapsEqual(a, b map[string]topicMeta) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// topics is what m subscribes to: the names it gave and the topics its
// regular expression matched, sorted, without repeats.
func (m *cmember) topics() []string {
	if len(m.matched) == 0 {
		return m.subscribed
	}
	out := append(slices.Clone(m.subscribed), m.matched...)
	slices.Sort(out)
	return slices.Compact(out)
}

// resolveRegexes matches every member's regular expression against the
// topics there are now, and reports whether a match changed since the
// member's last resolution (a first resolution, after a join or a load,
// is no change: the join already bumped the epoch, and a load restores
// the epoch the matches were made at).
func (c *Coordinator) resolveRegexes(cg *consumerGroup) bool {
	var names []string
	listed := false
	changed := false
	for _, m := range cg.members {
		if m.regex == nil {
			continue
		}
		if !listed && c.cfg.TopicNames != nil {
			names, listed = c.cfg.TopicNames(), true
		}
		re, err := compileTopicRegex(*m.regex)
		if err != nil {
			continue // checked when it came in; a stored one that no longer compiles matches nothing
		}
		var matched []string
		for _, t := range names {
			if re.MatchString(t) {
				matched = append(matched, t)
			}
		}
		slices.Sort(matched)
		if m.resolved && !slices.Equal(matched, m.matched) {
			changed = true
		}
		m.matched, m.resolved = matched, true
	}
	return changed
}

// compileTopicRegex compiles a SubscribedTopicRegex to match whole topic
// names, as Kafka's broker does (RE2J's matches(), not find()).
func compileTopicRegex(expr string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + expr + ")$")
}

func eqStringPtr(a, b *string) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
