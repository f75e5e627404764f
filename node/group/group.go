package group

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a classic group's state, named as Kafka names it.
type State int8

const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	case Dead:
		return "Dead"
	}
	return "Unknown"
}

type group struct {
	c  *Coordinator
	s  *shard
	id string

	state     State
	stateTime time.Time
	// deleting: DeleteGroups is storing the group's tombstones, with the
	// shard's mu let go; nobody joins it meanwhile (admin.go).
	deleting     bool
	protocolType string
	protocol     string
	generation   int32
	leader       string

	members map[string]*member
	// pending are members told MEMBER_ID_REQUIRED that have not joined
	// with their new id yet; a rebalance waits for them.
	pending map[string]*pendingMember
	// static maps group.instance.id to the member that currently holds it.
	static map[string]string

	offsets map[string]map[int32]commit

	// consumer is set for a consumer-protocol (KIP-848) group, whose
	// members are its own; the classic fields above then stay empty.
	consumer *consumerGroup

	// The join barrier: joinSeq invalidates stale timer callbacks;
	// initialDelay is set while the first rebalance of an empty group
	// waits for more members, newMemberAdded extends that wait.
	joinTimer      Timer
	joinSeq        uint64
	initialDelay   bool
	newMemberAdded bool

	// The sync barrier: members that got their JoinGroup answer must
	// send SyncGroup within the rebalance timeout.
	pendingSync map[string]struct{}
	syncTimer   Timer
	syncSeq     uint64
}

type member struct {
	id         string
	instanceID *string
	clientID   string
	clientHost string

	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocolType     string
	protocols        []kmsg.JoinGroupRequestProtocol
	assignment       []byte

	// A parked JoinGroup or SyncGroup; the buffered channel is answered
	// exactly once and then cleared.
	joinReply   chan *kmsg.JoinGroupResponse
	joinVersion int16
	syncReply   chan *kmsg.SyncGroupResponse
	syncVersion int16

	sessionTimer Timer
	sessionSeq   uint64
}

type pendingMember struct {
	timer Timer
}

type commit struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	timestamp   int64
	// seq is the commit record's place in the log (shard.nextSeq): a
	// transaction's offsets, applied at its marker, replace the current
	// commit only if written after it, as Kafka's
	// completePendingTxnOffsetCommit and as the cleaner keeps the later.
	seq uint64
}

func (c *Coordinator) newGroup(s *shard, id string) *group {
	return &group{
		c:         c,
		s:         s,
		id:        id,
		state:     Empty,
		stateTime: c.clock.Now(),
		members:   make(map[string]*member),
		pending:   make(map[string]*pendingMember),
		static:    make(map[string]string),
		offsets:   make(map[string]map[int32]commit),
	}
}

func (g *group) logger() logrus.FieldLogger {
	return g.c.logger.WithFields(logrus.Fields{"group": g.id, "generation": g.generation, "state": g.state.String()})
}

func (g *group) transition(to State) {
	g.state = to
	g.stateTime = g.c.clock.Now()
}

// newMemberID is Kafka's: the client id (or the static instance id) and a
// random UUID.
func newMemberID(clientID string, instanceID *string) string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u[:])
	uuid := h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	prefix := clientID
	if instanceID != nil {
		prefix = *instanceID
	}
	return prefix + "-" + uuid
}

// sortedMembers returns the members ordered by id, so that every choice
// the coordinator makes among them is deterministic.
func (g *group) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *member) int { return cmp.Compare(a.id, b.id) })
	return ms
}

func (g *group) isStaticMemberFenced(instanceID *string, memberID string) bool {
	if instanceID == nil {
		return false
	}
	id, ok := g.static[*instanceID]
	return ok && id != memberID
}

// supportsProtocols is Kafka's check for a joining member: an empty group
// takes any non-empty protocol list; otherwise the type must match and at
// least one protocol must be one every current member supports.
func (g *group) supportsProtocols(protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	if g.state == Empty || len(g.members) == 0 {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		if g.supportedByAll(p.Name) {
			return true
		}
	}
	return false
}

func (g *group) supportedByAll(name string) bool {
	for _, m := range g.members {
		if !slices.ContainsFunc(m.protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return p.Name == name }) {
			return false
		}
	}
	return true
}

// selectProtocol is Kafka's vote: among the protocols every member
// supports, each member votes for the first it lists; most votes wins, ties
// go to the name that sorts first.
func (g *group) selectProtocol() string {
	votes := make(map[string]int)
	for _, m := range g.members {
		for _, p := range m.protocols {
			if g.supportedByAll(p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	for name, v := range votes {
		if v > bestVotes || v == bestVotes && name < best {
			best, bestVotes = name, v
		}
	}
	return best
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

func (m *member) matches(protocols []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(m.protocols, protocols, func(a, b kmsg.JoinGroupRequestProtocol) bool {
		return a.Name == b.Name && bytes.Equal(a.Metadata, b.Metadata)
	})
}

// rebalanceTimeout is the longest rebalance timeout any member asked for.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

func (g *group) allMembersJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if m.joinReply == nil {
			return false
		}
	}
	return true
}

// add puts a member in the group; the first member fixes the protocol type
// and the first to join leads.
func (g *group) add(m *member) {
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	g.members[m.id] = m
	if g.leader == "" {
		g.leader = m.id
	}
}

// remove takes a member out of the group without starting a rebalance,
// answering whatever request of it is parked.
func (g *group) remove(m *member, code int16) {
	m.failJoin(code)
	m.failSync(code)
	if m.sessionTimer != nil {
		m.sessionTimer.Stop()
	}
	m.sessionSeq++
	delete(g.members, m.id)
	delete(g.pendingSync, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	if g.leader == m.id {
		g.leader = ""
		if ms := g.sortedMembers(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
}

func (m *member) replyJoin(resp *kmsg.JoinGroupResponse) {
	if m.joinReply != nil {
		m.joinReply <- resp
		m.joinReply = nil
	}
}

func (m *member) failJoin(code int16) {
	if m.joinReply == nil {
		return
	}
	resp := (&kmsg.JoinGroupRequest{Version: m.joinVersion}).ResponseKind().(*kmsg.JoinGroupResponse)
	resp.ErrorCode = code
	resp.MemberID = m.id
	m.replyJoin(resp)
}

func (m *member) replySync(resp *kmsg.SyncGroupResponse) {
	if m.syncReply != nil {
		m.syncReply <- resp
		m.syncReply = nil
	}
}

func (m *member) failSync(code int16) {
	if m.syncReply == nil {
		return
	}
	resp := (&kmsg.SyncGroupRequest{Version: m.syncVersion}).ResponseKind().(*kmsg.SyncGroupResponse)
	resp.ErrorCode = code
	m.replySync(resp)
}

// shutdown answers every parked request with code and stops every timer;
// the group is being unloaded or deleted.
func (g *group) shutdown(code int16) {
	for _, m := range g.members {
		m.failJoin(code)
		m.failSync(code)
		if m.sessionTimer != nil {
			m.sessionTimer.Stop()
		}
		m.sessionSeq++
	}
	for _, p := range g.pending {
		p.timer.Stop()
	}
	g.stopJoinTimer()
	g.stopSyncTimer()
	if g.consumer != nil {
		g.consumer.shutdown()
	}
}

func (g *group) stopJoinTimer() {
	g.joinSeq++
	if g.joinTimer != nil {
		g.joinTimer.Stop()
		g.joinTimer = nil
	}
}

func (g *group) stopSyncTimer() {
	g.syncSeq++
	if g.syncTimer != nil {
		g.syncTimer.Stop()
		g.syncTimer = nil
	}
	g.pendingSync = nil
}

// alive reports whether g is still the group its shard holds under its
// name; a timer for a deleted or reloaded group must do nothing.
func (g *group) alive() bool {
	return g.state != Dead && g.s.groups[g.id] == g
}

// scheduleSession restarts m's session timeout: Kafka's
// completeAndScheduleNextHeartbeatExpiration. A member parked in JoinGroup
// or SyncGroup is waiting on the coordinator, not the other way round, so
// its session is extended rather than expired.
func (c *Coordinator) scheduleSession(g *group, m *member) {
	if m.sessionTimer != nil {
		m.sessionTimer.Stop()
	}
	m.sessionSeq++
	seq := m.sessionSeq
	m.sessionTimer = c.after(g.s, m.sessionTimeout, func() {
		if !g.alive() || g.members[m.id] != m || m.sessionSeq != seq {
			return
		}
		if m.joinReply != nil || m.syncReply != nil {
			c.scheduleSession(g, m)
			return
		}
		g.logger().WithField("member", m.id).Info("member session expired")
		c.removeMemberAndUpdate(g, m, "session timeout")
	})
}

// removeMemberAndUpdate is Kafka's removeMemberAndUpdateGroup: the member
// leaves or expires and the group rebalances without it.
func (c *Coordinator) removeMemberAndUpdate(g *group, m *member, reason string) {
	g.remove(m, kerr.UnknownMemberID.Code)
	switch g.state {
	case Stable, CompletingRebalance:
		c.prepareRebalance(g, reason)
	case PreparingRebalance:
		c.tryCompleteJoin(g)
	}
}

func (c *Coordinator) maybePrepareRebalance(g *group, reason string) {
	switch g.state {
	case Stable, CompletingRebalance, Empty:
		c.prepareRebalance(g, reason)
	}
}

// prepareRebalance opens the join barrier. Members parked in SyncGroup
// learn REBALANCE_IN_PROGRESS. The first rebalance of an empty group waits
// InitialRebalanceDelay for more members (Kafka's InitialDelayedJoin);
// any other completes as soon as every member rejoined, or at the rebalance
// timeout without the members that did not.
func (c *Coordinator) prepareRebalance(g *group, reason string) {
	if g.state == CompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
			m.failSync(kerr.RebalanceInProgress.Code)
		}
	}
	g.stopSyncTimer()
	wasEmpty := g.state == Empty
	g.transition(PreparingRebalance)
	g.logger().WithField("reason", reason).Info("preparing rebalance")

	timeout := g.rebalanceTimeout()
	g.stopJoinTimer()
	if wasEmpty && c.cfg.InitialRebalanceDelay > 0 {
		g.initialDelay = true
		delay := min(c.cfg.InitialRebalanceDelay, timeout)
		c.scheduleInitialJoin(g, delay, max(timeout-c.cfg.InitialRebalanceDelay, 0))
		return
	}
	g.initialDelay = false
	c.scheduleJoinDeadline(g, timeout)
	c.tryCompleteJoin(g)
}

func (c *Coordinator) scheduleInitialJoin(g *group, delay, remaining time.Duration) {
	seq := g.joinSeq
	g.joinTimer = c.after(g.s, delay, func() {
		if !g.alive() || g.joinSeq != seq || g.state != PreparingRebalance {
			return
		}
		if g.newMemberAdded && remaining > 0 {
			g.newMemberAdded = false
			c.scheduleInitialJoin(g, min(c.cfg.InitialRebalanceDelay, remaining), max(remaining-c.cfg.InitialRebalanceDelay, 0))
			return
		}
		c.completeJoin(g)
	})
}

func (c *Coordinator) scheduleJoinDeadline(g *group, timeout time.Duration) {
	seq := g.joinSeq
	g.joinTimer = c.after(g.s, timeout, func() {
		if !g.alive() || g.joinSeq != seq || g.state != PreparingRebalance {
			return
		}
		c.completeJoin(g)
	})
}

func (c *Coordinator) tryCompleteJoin(g *group) {
	if g.state == PreparingRebalance && !g.initialDelay && g.allMembersJoined() {
		c.completeJoin(g)
	}
}

// completeJoin closes the join barrier (Kafka's onCompleteJoin): dynamic
// members that did not rejoin are dropped, the generation advances, a
// protocol is chosen and every joined member is answered, the leader with
// everyone's metadata.
func (c *Coordinator) completeJoin(g *group) {
	g.stopJoinTimer()
	g.initialDelay = false
	g.newMemberAdded = false
	for _, m := range g.sortedMembers() {
		if m.joinReply == nil && m.instanceID == nil {
			g.logger().WithField("member", m.id).Info("member did not rejoin in time")
			g.remove(m, kerr.UnknownMemberID.Code)
		}
	}
	if len(g.members) > 0 && !g.electJoinedLeader() {
		// Only static members that have not rejoined remain; wait for
		// them until their sessions expire.
		c.scheduleJoinDeadline(g, g.rebalanceTimeout())
		return
	}

	g.generation++
	if g.generation < 0 {
		g.generation = 1
	}
	if len(g.members) == 0 {
		g.protocol = ""
		g.transition(Empty)
		if err := c.storeGroup(g); err != nil {
			g.logger().WithError(err).Warn("store empty group")
		}
		return
	}
	g.protocol = g.selectProtocol()
	g.transition(CompletingRebalance)
	g.logger().WithFields(logrus.Fields{"protocol": g.protocol, "leader": g.leader, "members": len(g.members)}).Info("rebalance joined")

	g.pendingSync = make(map[string]struct{}, len(g.members))
	for _, m := range g.sortedMembers() {
		g.pendingSync[m.id] = struct{}{}
		if m.joinReply == nil {
			continue
		}
		resp := (&kmsg.JoinGroupRequest{Version: m.joinVersion}).ResponseKind().(*kmsg.JoinGroupResponse)
		g.fillJoin(resp, m.id)
		m.replyJoin(resp)
		c.scheduleSession(g, m)
	}
	c.schedulePendingSync(g)
}

// electJoinedLeader keeps the leader if it rejoined, else hands leadership
// to a member that did; false if none did.
func (g *group) electJoinedLeader() bool {
	if l := g.members[g.leader]; l != nil && l.joinReply != nil {
		return true
	}
	for _, m := range g.sortedMembers() {
		if m.joinReply != nil {
			g.leader = m.id
			return true
		}
	}
	return false
}

func (g *group) fillJoin(resp *kmsg.JoinGroupResponse, memberID string) {
	resp.Generation = g.generation
	resp.ProtocolType = kmsg.StringPtr(g.protocolType)
	resp.Protocol = kmsg.StringPtr(g.protocol)
	resp.LeaderID = g.leader
	resp.MemberID = memberID
	if memberID == g.leader {
		for _, m := range g.sortedMembers() {
			resp.Members = append(resp.Members, kmsg.JoinGroupResponseMember{
				MemberID:         m.id,
				InstanceID:       m.instanceID,
				ProtocolMetadata: m.metadataFor(g.protocol),
			})
		}
	}
}

// schedulePendingSync gives members the rebalance timeout to send
// SyncGroup after their JoinGroup answer; those that do not are removed and
// the group rebalances again.
func (c *Coordinator) schedulePendingSync(g *group) {
	if g.syncTimer != nil {
		g.syncTimer.Stop()
	}
	g.syncSeq++
	seq := g.syncSeq
	g.syncTimer = c.after(g.s, g.rebalanceTimeout(), func() {
		if !g.alive() || g.syncSeq != seq || len(g.pendingSync) == 0 {
			return
		}
		if g.state != CompletingRebalance && g.state != Stable {
			return
		}
		for id := range g.pendingSync {
			if m := g.members[id]; m != nil {
				g.logger().WithField("member", id).Info("member did not sync in time")
				g.remove(m, kerr.UnknownMemberID.Code)
			}
		}
		c.prepareRebalance(g, "members did not sync in time")
	})
}

// emptyConsumerAssignment is what a "consumer" member gets when the leader
// assigned it nothing: a decodable empty assignment rather than zero bytes,
// which some clients fail to parse.
var emptyConsumerAssignment = func() []byte {
	var a kmsg.ConsumerMemberAssignment
	return a.AppendTo(nil)
}()

func (g *group) assignmentOrEmpty(a []byte) []byte {
	if len(a) == 0 && g.protocolType == "consumer" {
		return emptyConsumerAssignment
	}
	return a
}
