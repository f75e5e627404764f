package group

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupDescribe describes consumer-protocol groups, Kafka's
// ConsumerGroup.asDescribedGroup: state, group epoch, target assignment
// epoch, assignor, and per member its epoch, subscription, current and
// target assignment. A group that does not exist, or is classic, answers
// GROUP_ID_NOT_FOUND.
func (c *Coordinator) ConsumerGroupDescribe(req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, id := range req.Groups {
		dg := kmsg.NewConsumerGroupDescribeResponseGroup()
		dg.Group = id
		c.describeConsumer(id, &dg, req.Version)
		if req.IncludeAuthorizedOperations && dg.ErrorCode == 0 {
			dg.AuthorizedOperations = groupAuthorizedOperations
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

func (c *Coordinator) describeConsumer(id string, dg *kmsg.ConsumerGroupDescribeResponseGroup, version int16) {
	s, code := c.lockShard(id)
	if code != 0 {
		dg.ErrorCode = code
		return
	}
	defer s.mu.Unlock()
	g := s.groups[id]
	switch {
	case g == nil || g.state == Dead:
		dg.ErrorCode = kerr.GroupIDNotFound.Code
		dg.ErrorMessage = kmsg.StringPtr("Group " + id + " not found.")
		return
	case g.consumer == nil:
		dg.ErrorCode = kerr.GroupIDNotFound.Code
		dg.ErrorMessage = kmsg.StringPtr("Group " + id + " is not a consumer group.")
		return
	}
	cg := g.consumer
	dg.State = g.consumerState()
	dg.Epoch = cg.epoch
	dg.AssignmentEpoch = cg.assignmentEpoch
	dg.AssignorName = cg.assignor
	if dg.AssignorName == "" {
		dg.AssignorName = groupAssignor(cg)
	}
	for _, m := range cg.sortedMembers() {
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.RackID = m.rackID
		dm.MemberEpoch = m.epoch
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.SubscribedTopics = slices.Clone(m.topics())
		dm.SubscribedTopicRegex = m.regex
		if dm.SubscribedTopics == nil {
			dm.SubscribedTopics = []string{}
		}
		dm.Assignment = describeAssignment(cg, m.assigned)
		dm.TargetAssignment = describeAssignment(cg, cg.target[m.id])
		if version >= 1 {
			dm.MemberType = 1 // consumer protocol (0 would be classic)
		}
		dg.Members = append(dg.Members, dm)
	}
}

func describeAssignment(cg *consumerGroup, set tpSet) kmsg.Assignment {
	a := kmsg.NewAssignment()
	byTopic := map[string][]int32{}
	for p := range set {
		byTopic[p.topic] = append(byTopic[p.topic], p.partition)
	}
	names := make([]string, 0, len(byTopic))
	for t := range byTopic {
		names = append(names, t)
	}
	slices.Sort(names)
	a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, t := range names {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID = cg.topics[t].id
		tp.Topic = t
		tp.Partitions = byTopic[t]
		slices.Sort(tp.Partitions)
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	return a
}

// describeConsumerClassic is how DescribeGroups shows a consumer-protocol
// group, as Kafka does: protocol type "consumer", the assignor as the
// protocol, and each member's subscription and assignment in the classic
// consumer encoding.
func (g *group) describeConsumerClassic(dg *kmsg.DescribeGroupsResponseGroup) {
	cg := g.consumer
	dg.State = g.consumerState()
	dg.ProtocolType = "consumer"
	dg.Protocol = cg.assignor
	for _, m := range cg.sortedMembers() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		var meta kmsg.ConsumerMemberMetadata
		meta.Version = 3
		meta.Topics = slices.Clone(m.topics())
		dm.ProtocolMetadata = meta.AppendTo(nil)
		var asg kmsg.ConsumerMemberAssignment
		asg.Version = 3
		byTopic := map[string][]int32{}
		for p := range m.assigned {
			byTopic[p.topic] = append(byTopic[p.topic], p.partition)
		}
		names := make([]string, 0, len(byTopic))
		for t := range byTopic {
			names = append(names, t)
		}
		slices.Sort(names)
		for _, t := range names {
			ps := byTopic[t]
			slices.Sort(ps)
			asg.Topics = append(asg.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: t, Partitions: ps})
		}
		dm.MemberAssignment = asg.AppendTo(nil)
		dg.Members = append(dg.Members, dm)
	}
}
