package share

import (
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicInfo is what the coordinator needs of a subscribed topic.
type TopicInfo struct {
	ID         [16]byte
	Partitions int32
}

// Resolve looks subscribed topics up (in the caller's catalog); a topic
// it leaves out does not exist or may not be consumed (internal topics).
type Resolve func(names []string) map[string]TopicInfo

// Assigned is a member's assignment on one topic.
type Assigned struct {
	TopicID    [16]byte
	Topic      string
	Partitions []int32
}

type member struct {
	id, clientID, clientHost string
	rack                     *string
	epoch                    int32
	subscribed               []string // sorted
	assignment               []Assigned
	lastSeen                 time.Time
}

type group struct {
	id      string
	epoch   int32
	members map[string]*member
	altered map[string]bool // topics AlterShareGroupOffsets set offsets on
}

// Coordinator keeps the share groups this node coordinates: members,
// their subscriptions and assignments. See the package doc.
type Coordinator struct {
	cfg Config
	now func() time.Time

	mu     sync.Mutex
	groups map[string]*group
}

// NewCoordinator builds an empty coordinator.
func NewCoordinator(cfg Config) *Coordinator {
	return &Coordinator{cfg: cfg, now: time.Now, groups: map[string]*group{}}
}

// expireLocked removes g's members silent for the session timeout.
func (c *Coordinator) expireLocked(g *group, now time.Time) {
	changed := false
	for id, m := range g.members {
		if now.Sub(m.lastSeen) > c.cfg.SessionTimeout {
			delete(g.members, id)
			changed = true
		}
	}
	if changed {
		g.epoch++
	}
}

// Heartbeat answers a ShareGroupHeartbeat the caller has authorized and
// checked the group id of. clientID and host are for Describe.
func (c *Coordinator) Heartbeat(req *kmsg.ShareGroupHeartbeatRequest, clientID, host string, resolve Resolve) *kmsg.ShareGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	fail := func(e *kerr.Error) *kmsg.ShareGroupHeartbeatResponse {
		resp.ErrorCode = e.Code
		return resp
	}
	if req.MemberID == "" || len(req.MemberID) > 36 || req.MemberEpoch < -1 ||
		(req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0) ||
		(req.RackID != nil && strings.TrimSpace(*req.RackID) == "") {
		return fail(kerr.InvalidRequest)
	}
	if len(req.SubscribedTopicNames) > 10_000 {
		return fail(kerr.InvalidRequest)
	}
	now := c.now()
	resp.MemberID = kmsg.StringPtr(req.MemberID)
	resp.HeartbeatIntervalMillis = int32(c.cfg.HeartbeatInterval.Milliseconds())

	// The subscription to resolve: the request's, else the member's.
	c.mu.Lock()
	g := c.groups[req.GroupID]
	if req.MemberEpoch == -1 {
		if g != nil {
			if _, ok := g.members[req.MemberID]; ok {
				delete(g.members, req.MemberID)
				g.epoch++
			}
		}
		c.mu.Unlock()
		resp.MemberEpoch = -1
		return resp
	}
	var m *member
	if g != nil {
		c.expireLocked(g, now)
		m = g.members[req.MemberID]
	}
	if req.MemberEpoch > 0 {
		switch {
		case m == nil:
			c.mu.Unlock()
			return fail(kerr.UnknownMemberID)
		case req.MemberEpoch != m.epoch && req.MemberEpoch != m.epoch-1:
			c.mu.Unlock()
			return fail(kerr.FencedMemberEpoch)
		}
	}
	subscribed := req.SubscribedTopicNames
	if subscribed == nil && m != nil {
		subscribed = m.subscribed
	}
	subscribed = slices.Clone(subscribed)
	c.mu.Unlock()

	sort.Strings(subscribed)
	subscribed = slices.Compact(subscribed)
	topics := resolve(subscribed) // outside the lock: it reads the catalog
	assignment := assign(subscribed, topics)

	c.mu.Lock()
	defer c.mu.Unlock()
	g = c.groups[req.GroupID]
	if g == nil {
		if len(c.groups) >= c.cfg.MaxGroups {
			return fail(kerr.GroupMaxSizeReached)
		}
		g = &group{id: req.GroupID, members: map[string]*member{}}
		c.groups[req.GroupID] = g
	}
	m = g.members[req.MemberID]
	if m == nil {
		if req.MemberEpoch > 0 {
			return fail(kerr.UnknownMemberID) // expired meanwhile
		}
		if len(g.members) >= c.cfg.MaxMembers {
			return fail(kerr.GroupMaxSizeReached)
		}
		m = &member{id: req.MemberID}
		g.members[req.MemberID] = m
	}
	m.clientID, m.clientHost, m.rack, m.lastSeen = clientID, host, req.RackID, now
	m.subscribed = subscribed
	if req.MemberEpoch == 0 || m.epoch == 0 || !sameAssignment(m.assignment, assignment) {
		g.epoch++
		m.epoch = g.epoch
		m.assignment = assignment
		a := &kmsg.ShareGroupHeartbeatResponseAssignment{}
		for _, t := range assignment {
			a.TopicPartitions = append(a.TopicPartitions, kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{TopicID: t.TopicID, Partitions: slices.Clone(t.Partitions)})
		}
		resp.Assignment = a
	}
	resp.MemberEpoch = m.epoch
	return resp
}

// assign gives a member every partition of every topic it subscribes to
// that exists: share group members split records, not partitions, so
// each partition is read by all of them together.
func assign(subscribed []string, topics map[string]TopicInfo) []Assigned {
	var out []Assigned
	for _, name := range subscribed {
		t, ok := topics[name]
		if !ok || t.Partitions <= 0 {
			continue
		}
		a := Assigned{TopicID: t.ID, Topic: name, Partitions: make([]int32, t.Partitions)}
		for i := range a.Partitions {
			a.Partitions[i] = int32(i)
		}
		out = append(out, a)
	}
	return out
}

func sameAssignment(a, b []Assigned) bool {
	return slices.EqualFunc(a, b, func(x, y Assigned) bool {
		return x.TopicID == y.TopicID && slices.Equal(x.Partitions, y.Partitions)
	})
}

// GroupState is a share group's state as ListGroups and Describe name it.
func groupState(g *group) string {
	if len(g.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// Has tells whether this coordinator keeps group.
func (c *Coordinator) Has(group string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.groups[group]
	return ok
}

// Describe answers one group of a ShareGroupDescribe: GROUP_ID_NOT_FOUND
// for a group it does not keep.
func (c *Coordinator) Describe(id string) kmsg.ShareGroupDescribeResponseGroup {
	out := kmsg.NewShareGroupDescribeResponseGroup()
	out.GroupID = id
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[id]
	if g == nil {
		out.ErrorCode = kerr.GroupIDNotFound.Code
		out.GroupState = "Dead"
		return out
	}
	c.expireLocked(g, c.now())
	out.GroupState, out.GroupEpoch, out.AssignmentEpoch, out.Assignor = groupState(g), g.epoch, g.epoch, "simple"
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		m := g.members[id]
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID, dm.RackID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.id, m.rack, m.epoch, m.clientID, m.clientHost
		dm.SubscribedTopicNames = slices.Clone(m.subscribed)
		for _, a := range m.assignment {
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{
				TopicID: a.TopicID, Topic: a.Topic, Partitions: slices.Clone(a.Partitions)})
		}
		out.Members = append(out.Members, dm)
	}
	return out
}

// Summary is one group for ListGroups.
type Summary struct{ ID, State string }

// List is every share group this coordinator keeps, by id.
func (c *Coordinator) List() []Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Summary, 0, len(c.groups))
	now := c.now()
	for _, g := range c.groups {
		c.expireLocked(g, now)
		out = append(out, Summary{g.id, groupState(g)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Delete removes an empty group: NON_EMPTY_GROUP while it has members,
// GROUP_ID_NOT_FOUND when there is none.
func (c *Coordinator) Delete(id string) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[id]
	if g == nil {
		return kerr.GroupIDNotFound
	}
	c.expireLocked(g, c.now())
	if len(g.members) > 0 {
		return kerr.NonEmptyGroup
	}
	delete(c.groups, id)
	return nil
}

// Ensure keeps group, empty if new (its offsets were set by
// AlterShareGroupOffsets), and tells how many members it has.
func (c *Coordinator) Ensure(id string) (int, *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[id]
	if g == nil {
		if len(c.groups) >= c.cfg.MaxGroups {
			return 0, kerr.GroupMaxSizeReached
		}
		g = &group{id: id, members: map[string]*member{}}
		c.groups[id] = g
	}
	c.expireLocked(g, c.now())
	return len(g.members), nil
}

// Subscribed is every topic group's members subscribe to, sorted.
func (c *Coordinator) Subscribed(id string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[id]
	if g == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, m := range g.members {
		for _, t := range m.subscribed {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Altered remembers that group has offsets on topic (set here), for a
// DescribeShareGroupOffsets of every topic; Topics lists them.
func (c *Coordinator) Altered(id, topic string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.groups[id]; g != nil {
		if g.altered == nil {
			g.altered = map[string]bool{}
		}
		g.altered[topic] = true
	}
}

// Topics is what a DescribeShareGroupOffsets of every topic reports:
// the members' subscriptions and the topics whose offsets were set.
func (c *Coordinator) Topics(id string) []string {
	out := c.Subscribed(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.groups[id]; g != nil {
		for t := range g.altered {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	sort.Strings(out)
	return out
}
