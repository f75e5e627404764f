package group

import (
	"cmp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups lists every group this node coordinates, filtered by state
// (v4+, case-insensitive as Kafka parses them) and type (v5+: "classic",
// or "consumer" for KIP-848 groups).
func (c *Coordinator) ListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	matches := func(filter []string, v string) bool {
		return len(filter) == 0 || slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(f, v) })
	}
	for _, s := range c.loadedShards() {
		s.mu.Lock()
		if s.loading || s.gone {
			if s.loading {
				resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
			}
			s.mu.Unlock()
			continue
		}
		for _, g := range s.groups {
			state, typ, protocolType := g.state.String(), "classic", g.protocolType
			if g.consumer != nil {
				state, typ, protocolType = g.consumerState(), "consumer", "consumer"
			}
			if g.state == Dead || !matches(req.StatesFilter, state) || !matches(req.TypesFilter, typ) {
				continue
			}
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group = g.id
			lg.ProtocolType = protocolType
			lg.GroupState = state
			lg.GroupType = typ
			resp.Groups = append(resp.Groups, lg)
		}
		s.mu.Unlock()
	}
	slices.SortFunc(resp.Groups, func(a, b kmsg.ListGroupsResponseGroup) int { return cmp.Compare(a.Group, b.Group) })
	return resp
}

// groupAuthorizedOperations is READ, DELETE and DESCRIBE, every operation
// on a group; the node narrows it to what its authorizer allows the
// requester (node/15_describe_groups.go).
const groupAuthorizedOperations = 1<<3 | 1<<6 | 1<<8

// DescribeGroups reports each group's state, protocol and members, Kafka's
// GroupMetadata.summary: member metadata and assignments only while the
// group is Stable. A group that does not exist is reported Dead (v6+:
// GROUP_ID_NOT_FOUND).
func (c *Coordinator) DescribeGroups(req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		dg := kmsg.NewDescribeGroupsResponseGroup()
		dg.Group = id
		c.describe(id, &dg, req.Version)
		if req.IncludeAuthorizedOperations && dg.ErrorCode == 0 {
			dg.AuthorizedOperations = groupAuthorizedOperations
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

func (c *Coordinator) describe(id string, dg *kmsg.DescribeGroupsResponseGroup, version int16) {
	s, code := c.lockShard(id)
	if code != 0 {
		dg.ErrorCode = code
		return
	}
	defer s.mu.Unlock()
	g := s.groups[id]
	if g == nil || g.state == Dead {
		dg.State = Dead.String()
		if version >= 6 {
			dg.ErrorCode = kerr.GroupIDNotFound.Code
		}
		return
	}
	if g.consumer != nil {
		g.describeConsumerClassic(dg)
		return
	}
	dg.State = g.state.String()
	dg.ProtocolType = g.protocolType
	stable := g.state == Stable
	if stable {
		dg.Protocol = g.protocol
	}
	for _, m := range g.sortedMembers() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		if stable {
			dm.ProtocolMetadata = m.metadataFor(g.protocol)
			dm.MemberAssignment = m.assignment
		}
		dg.Members = append(dg.Members, dm)
	}
}

// DeleteGroups deletes empty groups with their committed offsets, writing
// tombstones for every key so the deletion survives a reload. A group with
// members answers NON_EMPTY_GROUP; an unknown one GROUP_ID_NOT_FOUND.
func (c *Coordinator) DeleteGroups(req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		dg := kmsg.NewDeleteGroupsResponseGroup()
		dg.Group = id
		dg.ErrorCode = c.deleteGroup(id)
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

func (c *Coordinator) deleteGroup(id string) int16 {
	// The group's writer orders the tombstones with commits in flight.
	s, w, code := c.lockWriter(id)
	if code != 0 {
		return code
	}
	defer func() {
		s.releaseWriter(id, w)
		s.mu.Unlock()
	}()
	g := s.groups[id]
	switch {
	case g == nil || g.state == Dead:
		return kerr.GroupIDNotFound.Code
	case g.state != Empty || len(g.members) > 0:
		return kerr.NonEmptyGroup.Code
	}
	var recs []record
	for t, ps := range g.offsets {
		for p := range ps {
			recs = append(recs, record{key: offsetCommitKey(id, t, p)})
		}
	}
	recs = append(recs, record{key: groupMetadataKey(id)})
	if g.consumer != nil {
		recs = append(recs, consumerRecords(id, g.consumer, nil)...)
	}
	// The shard's mu is let go for the append, as for a commit: the
	// writer keeps commits out, deleting keeps joiners out, and the other
	// groups of the shard go on.
	g.deleting = true
	s.mu.Unlock()
	err := c.append(s, recs)
	s.mu.Lock()
	g.deleting = false
	if s.gone {
		return kerr.NotCoordinator.Code // unloaded meanwhile; its state goes with it
	}
	if err != nil {
		g.logger().WithError(err).Warn("store group deletion")
		return appendErrorCode(err)
	}
	g.shutdown(kerr.CoordinatorNotAvailable.Code)
	g.transition(Dead)
	delete(s.groups, id)
	g.logger().Info("group deleted")
	return 0
}

// Exists tells whether id names a live group here (classic or consumer,
// members or only offsets): a share group may not take its id.
func (c *Coordinator) Exists(id string) bool {
	s, code := c.lockShard(id)
	if code != 0 {
		return false
	}
	defer s.mu.Unlock()
	g := s.groups[id]
	return g != nil && g.state != Dead
}
