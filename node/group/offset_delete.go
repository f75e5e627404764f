package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"slices"
)

// OffsetDelete deletes a group's committed offsets for the partitions named,
// as Kafka's handleDeleteOffsets does: an Empty group loses all of them; a
// consumer group with members keeps those of topics a member subscribes to
// (GROUP_SUBSCRIBED_TO_TOPIC for each) and loses the others; a group with
// members of another protocol type is NON_EMPTY_GROUP, an unknown group
// GROUP_ID_NOT_FOUND. Tombstones are stored before the offsets leave
// memory, so a failed store deletes nothing.
func (c *Coordinator) OffsetDelete(req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	// The group's writer orders the tombstones with commits in flight.
	s, w, code := c.lockWriter(req.Group)
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	defer func() {
		s.releaseWriter(req.Group, w)
		s.mu.Unlock()
	}()
	g := s.groups[req.Group]
	if g == nil || g.state == Dead {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	var subscribed func(topic string) bool
	switch {
	case g.state == Empty:
		subscribed = func(string) bool { return false }
	case g.consumer != nil:
		subscribed = func(topic string) bool {
			for _, m := range g.consumer.members {
				if slices.Contains(m.topics(), topic) {
					return true
				}
			}
			return false
		}
	case g.protocolType == "consumer":
		subscribed = g.subscribedTo()
	default:
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		return resp
	}

	type key struct {
		topic     string
		partition int32
	}
	var recs []record
	var doomed []key
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = rt.Topic
		sub := subscribed(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition = rp.Partition
			switch {
			case sub:
				sp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			default:
				if _, ok := g.offsets[rt.Topic][rp.Partition]; ok {
					recs = append(recs, record{key: offsetCommitKey(g.id, rt.Topic, rp.Partition)})
					doomed = append(doomed, key{rt.Topic, rp.Partition})
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(recs) > 0 {
		// Not under the shard's mu: the writer, held, keeps the group's
		// commits in order with the tombstones.
		s.mu.Unlock()
		err := c.append(s, recs)
		s.mu.Lock()
		if s.gone {
			resp.ErrorCode = kerr.NotCoordinator.Code // unloaded meanwhile
			resp.Topics = nil
			return resp
		}
		if err != nil {
			g.logger().WithError(err).Warn("store offset deletion")
			resp.ErrorCode = appendErrorCode(err)
			resp.Topics = nil
			return resp
		}
	}
	for _, k := range doomed {
		deleteCommit(g, k.topic, k.partition)
	}
	if len(doomed) > 0 {
		g.logger().WithField("partitions", len(doomed)).Info("offsets deleted")
	}
	return resp
}

// subscribedTo reports, for a consumer group with members, whether any
// member subscribes to a topic, from the consumer protocol metadata of the
// group's protocol (or a member's first, before one is chosen). Metadata
// that does not parse counts as subscribed to everything: better to keep an
// offset than delete one in use.
func (g *group) subscribedTo() func(string) bool {
	topics := make(map[string]bool)
	for _, m := range g.members {
		meta := m.metadataFor(g.protocol)
		if g.protocol == "" && len(m.protocols) > 0 {
			meta = m.protocols[0].Metadata
		}
		var cm kmsg.ConsumerMemberMetadata
		if err := cm.ReadFrom(meta); err != nil {
			return func(string) bool { return true }
		}
		for _, t := range cm.Topics {
			topics[t] = true
		}
	}
	return func(t string) bool { return topics[t] }
}
