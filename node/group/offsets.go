package group

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit stores committed offsets, Kafka's handleCommitOffsets. A
// commit with generation < 0 is a "simple" commit from a consumer that
// manages its own partitions (or an admin resetting offsets) and is only
// accepted while the group has no members; otherwise the member id and
// generation must be current. Offsets are durable in __consumer_offsets
// before the commit is acknowledged or visible to OffsetFetch.
//
// The shard's mutex is let go for the append, so a slow disk holds up no
// other group of the shard; the group's writer (writer.go), held throughout,
// keeps the group's commits in order.
func (c *Coordinator) OffsetCommit(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := newCommitResponse(req)
	s, w, code := c.lockWriter(req.Group)
	if code != 0 {
		return setCommitCodes(resp, code)
	}
	defer func() {
		s.releaseWriter(req.Group, w)
		s.mu.Unlock()
	}()
	t, code := c.commitTarget(s, req)
	if code != 0 {
		return setCommitCodes(resp, code)
	}
	recs, accepted := c.commitRecords(t.g, req, resp)
	s.mu.Unlock()
	err := c.append(s, recs)
	s.mu.Lock()
	if err != nil {
		t.g.logger().WithError(err).Warn("store offset commit")
		code := appendErrorCode(err)
		for _, a := range accepted {
			resp.Topics[a.ti].Partitions[a.pi].ErrorCode = code
		}
		return resp
	}
	c.applyCommits(s, t, req, accepted)
	return resp
}

// newCommitResponse is a response with every partition of req, no errors.
func newCommitResponse(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// setCommitCodes gives code to every partition without an error yet.
func setCommitCodes(resp *kmsg.OffsetCommitResponse, code int16) *kmsg.OffsetCommitResponse {
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			if resp.Topics[i].Partitions[j].ErrorCode == 0 {
				resp.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	}
	return resp
}

// commitTo is the group a commit goes to: created is set for a simple
// commit to a group the shard does not hold yet, which joins the shard only
// if the commit is stored; m is the committing member of a classic group.
type commitTo struct {
	g       *group
	created bool
	m       *member
}

// commitTarget checks that req may commit to its group, as Kafka does.
// Called with s.mu held.
func (c *Coordinator) commitTarget(s *shard, req *kmsg.OffsetCommitRequest) (commitTo, int16) {
	t := commitTo{g: s.groups[req.Group]}
	if t.g == nil {
		if req.Generation >= 0 {
			// A generation from a group this coordinator does not
			// know: the member is from a group that is gone.
			return t, kerr.IllegalGeneration.Code
		}
		t.g, t.created = c.newGroup(s, req.Group), true
	}
	g := t.g
	switch {
	case g.state == Dead:
		return t, kerr.CoordinatorNotAvailable.Code
	case g.consumer != nil:
		return t, g.checkConsumerMember(req.MemberID, req.Generation, true)
	case g.isStaticMemberFenced(req.InstanceID, req.MemberID):
		return t, kerr.FencedInstanceID.Code
	case req.Generation < 0 && g.state == Empty:
		// Simple commit: the group only stores offsets.
		return t, 0
	}
	if t.m = g.members[req.MemberID]; t.m == nil {
		return t, kerr.UnknownMemberID.Code
	}
	if req.Generation != g.generation {
		return t, kerr.IllegalGeneration.Code
	}
	if g.state == CompletingRebalance {
		// The member's assignment may be about to change; it must
		// rejoin before committing.
		return t, kerr.RebalanceInProgress.Code
	}
	return t, 0
}

// acceptedCommit is one partition's commit, to apply once stored.
type acceptedCommit struct {
	topic  string
	ti, pi int
	c      commit
}

// commitRecords checks each partition of req, setting the refused ones'
// codes in resp, and returns the records to store for the others. Called
// with the shard's mutex held.
func (c *Coordinator) commitRecords(g *group, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse) ([]record, []acceptedCommit) {
	now := c.clock.Now().UnixMilli()
	var recs []record
	var accepted []acceptedCommit
	for ti, t := range req.Topics {
		nparts, known := int32(0), true
		if c.cfg.PartitionCount != nil {
			nparts, known = c.cfg.PartitionCount(t.Topic)
		}
		for pi, p := range t.Partitions {
			switch {
			case !known || c.cfg.PartitionCount != nil && (p.Partition < 0 || p.Partition >= nparts):
				resp.Topics[ti].Partitions[pi].ErrorCode = kerr.UnknownTopicOrPartition.Code
				continue
			case p.Metadata != nil && c.cfg.MaxMetadataBytes > 0 && len(*p.Metadata) > c.cfg.MaxMetadataBytes:
				resp.Topics[ti].Partitions[pi].ErrorCode = kerr.OffsetMetadataTooLarge.Code
				continue
			}
			cm := commit{offset: p.Offset, leaderEpoch: p.LeaderEpoch, timestamp: now}
			if p.Metadata != nil {
				cm.metadata = *p.Metadata
			}
			recs = append(recs, record{key: offsetCommitKey(g.id, t.Topic, p.Partition), value: offsetCommitValue(cm)})
			accepted = append(accepted, acceptedCommit{t.Topic, ti, pi, cm})
		}
	}
	return recs, accepted
}

// applyCommits makes stored commits visible. The shard's mutex was let go
// for the append, so the group may have changed meanwhile: the commits go
// to the group the shard now holds under the id, as a replay of the log
// would apply them. Called with s.mu held.
func (c *Coordinator) applyCommits(s *shard, t commitTo, req *kmsg.OffsetCommitRequest, accepted []acceptedCommit) {
	if s.gone {
		return // stored; the next coordinator replays them
	}
	g := t.g
	if cur := s.groups[req.Group]; cur != nil && cur != g {
		g = cur
	}
	for _, a := range accepted {
		cm := a.c
		cm.seq = s.nextSeq()
		setCommit(g, a.topic, req.Topics[a.ti].Partitions[a.pi].Partition, cm)
	}
	if s.groups[req.Group] == nil && g.state != Dead && len(g.offsets) > 0 {
		s.groups[g.id] = g
	}
	if t.m != nil && g.members[t.m.id] == t.m {
		c.scheduleSession(g, t.m)
	}
}

// OffsetFetch returns committed offsets, Kafka's handleFetchOffsets: v0–v7
// ask for one group, v8+ for several; nil topics (v2+) mean every topic the
// group committed. A partition without a commit, or a group that never
// existed, answers offset -1 with no error.
func (c *Coordinator) OffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			var topics []fetchTopic
			if rg.Topics != nil {
				topics = make([]fetchTopic, 0, len(rg.Topics))
				for _, t := range rg.Topics {
					topics = append(topics, fetchTopic{t.Topic, t.Partitions})
				}
			}
			sg := kmsg.NewOffsetFetchResponseGroup()
			sg.Group = rg.Group
			if code := c.checkFetchMember(rg.Group, rg.MemberID, rg.MemberEpoch); code != 0 {
				sg.ErrorCode = code
			} else {
				sg.ErrorCode, sg.Topics = c.fetchOffsets(rg.Group, topics, req.RequireStable)
			}
			resp.Groups = append(resp.Groups, sg)
		}
		return resp
	}

	var topics []fetchTopic
	if req.Topics != nil || req.Version < 2 {
		topics = make([]fetchTopic, 0, len(req.Topics))
		for _, t := range req.Topics {
			topics = append(topics, fetchTopic{t.Topic, t.Partitions})
		}
	}
	code, groupTopics := c.fetchOffsets(req.Group, topics, req.Version >= 7 && req.RequireStable)
	if code != 0 {
		if req.Version >= 2 {
			resp.ErrorCode = code
			return resp
		}
		// v0–v1 have no group error: every partition carries it.
		groupTopics = nil
		for _, t := range topics {
			gt := kmsg.NewOffsetFetchResponseGroupTopic()
			gt.Topic = t.topic
			for _, p := range t.partitions {
				gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				gp.Partition, gp.Offset, gp.ErrorCode = p, -1, code
				gt.Partitions = append(gt.Partitions, gp)
			}
			groupTopics = append(groupTopics, gt)
		}
	}
	for _, gt := range groupTopics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = gt.Topic
		for _, gp := range gt.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata, gp.ErrorCode
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

type fetchTopic struct {
	topic      string
	partitions []int32
}

// fetchOffsets answers one group; nil topics means all committed ones.
// With requireStable (KIP-447), a partition with a transactional commit
// awaiting its marker answers UNSTABLE_OFFSET_COMMIT, which the client
// retries, rather than the offset the transaction is about to replace.
func (c *Coordinator) fetchOffsets(groupID string, topics []fetchTopic, requireStable bool) (int16, []kmsg.OffsetFetchResponseGroupTopic) {
	s, code := c.lockShard(groupID)
	if code != 0 {
		return code, nil
	}
	defer s.mu.Unlock()
	g := s.groups[groupID]
	if g != nil && g.state == Dead {
		g = nil
	}
	lookup := func(topic string, p int32) kmsg.OffsetFetchResponseGroupTopicPartition {
		rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		rp.Partition, rp.Offset, rp.Metadata = p, -1, kmsg.StringPtr("")
		if requireStable && s.hasPending(groupID, topic, p) {
			rp.ErrorCode = kerr.UnstableOffsetCommit.Code
			return rp
		}
		if g == nil {
			return rp
		}
		if cm, ok := g.offsets[topic][p]; ok {
			rp.Offset, rp.LeaderEpoch, rp.Metadata = cm.offset, cm.leaderEpoch, kmsg.StringPtr(cm.metadata)
		}
		return rp
	}
	var out []kmsg.OffsetFetchResponseGroupTopic
	if topics == nil {
		if g == nil {
			return 0, nil
		}
		names := make([]string, 0, len(g.offsets))
		for t := range g.offsets {
			names = append(names, t)
		}
		slices.Sort(names)
		for _, t := range names {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = t
			parts := make([]int32, 0, len(g.offsets[t]))
			for p := range g.offsets[t] {
				parts = append(parts, p)
			}
			slices.Sort(parts)
			for _, p := range parts {
				rt.Partitions = append(rt.Partitions, lookup(t, p))
			}
			out = append(out, rt)
		}
		return 0, out
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.topic
		for _, p := range t.partitions {
			rt.Partitions = append(rt.Partitions, lookup(t.topic, p))
		}
		out = append(out, rt)
	}
	return 0, out
}

// checkFetchMember checks the member of an OffsetFetch v9+ against a
// consumer-protocol group, as Kafka does; a request without a member, or to
// a classic group, is not checked.
func (c *Coordinator) checkFetchMember(groupID string, memberID *string, epoch int32) int16 {
	if memberID == nil && epoch < 0 {
		return 0
	}
	s, code := c.lockShard(groupID)
	if code != 0 {
		return code
	}
	defer s.mu.Unlock()
	g := s.groups[groupID]
	if g == nil || g.consumer == nil || g.state == Dead {
		return 0
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	return g.checkConsumerMember(id, epoch, false)
}
