package group

import (
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// storeGroup writes g's metadata (generation, protocol, leader, members
// with their assignments) so that a coordinator loading the partition later
// resumes the same generation; a Dead group is written as a tombstone.
func (c *Coordinator) storeGroup(g *group) error {
	return c.append(g.s, []record{g.metadataRecord()})
}

func (g *group) metadataRecord() record {
	key := groupMetadataKey(g.id)
	if g.state == Dead {
		return record{key: key}
	}
	v := kmsg.GroupMetadataValue{
		Version:               groupMetadataValueVer,
		ProtocolType:          g.protocolType,
		Generation:            g.generation,
		CurrentStateTimestamp: g.stateTime.UnixMilli(),
	}
	if g.protocol != "" {
		v.Protocol = kmsg.StringPtr(g.protocol)
	}
	if g.leader != "" && len(g.members) > 0 {
		v.Leader = kmsg.StringPtr(g.leader)
	}
	for _, m := range g.sortedMembers() {
		v.Members = append(v.Members, kmsg.GroupMetadataValueMember{
			MemberID:               m.id,
			InstanceID:             m.instanceID,
			ClientID:               m.clientID,
			ClientHost:             m.clientHost,
			RebalanceTimeoutMillis: int32(m.rebalanceTimeout / time.Millisecond),
			SessionTimeoutMillis:   int32(m.sessionTimeout / time.Millisecond),
			Subscription:           m.metadataFor(g.protocol),
			Assignment:             m.assignment,
		})
	}
	return record{key: key, value: v.AppendTo(nil)}
}

// replay rebuilds the groups of s's partition from its records; later
// records of a key replace earlier ones and tombstones delete them.
func (c *Coordinator) replay(s *shard) (map[string]*group, error) {
	groups := make(map[string]*group)
	hasMetadata := make(map[string]bool)
	get := func(id string) *group {
		g := groups[id]
		if g == nil {
			g = c.newGroup(s, id)
			groups[id] = g
		}
		return g
	}
	var skipped int
	loads := make(map[string]*cgLoad)
	s.pendingTxn, s.markerEpoch = nil, nil
	err := c.log.Replay(s.partition, func(batches []byte) error {
		return replayTxn(batches, s, func(r record) error {
			if len(r.key) < 2 {
				skipped++
				return nil
			}
			switch version := int16(r.key[0])<<8 | int16(r.key[1]); version {
			case 0, 1:
				var k kmsg.OffsetCommitKey
				if err := k.ReadFrom(r.key); err != nil {
					return fmt.Errorf("offset commit key: %w", err)
				}
				g := get(k.Group)
				if r.value == nil {
					deleteCommit(g, k.Topic, k.Partition)
					return nil
				}
				var v kmsg.OffsetCommitValue
				if err := v.ReadFrom(r.value); err != nil {
					return fmt.Errorf("offset commit value of group %q %s/%d: %w", k.Group, k.Topic, k.Partition, err)
				}
				epoch := v.LeaderEpoch
				if v.Version < 3 {
					epoch = -1
				}
				cm := commit{offset: v.Offset, leaderEpoch: epoch, metadata: v.Metadata, timestamp: v.CommitTimestamp, seq: r.seq}
				if r.seq == 0 {
					cm.seq = s.nextSeq() // a plain commit: its place is now
				}
				setCommitIfNewer(g, k.Topic, k.Partition, cm)
			case 2:
				var k kmsg.GroupMetadataKey
				if err := k.ReadFrom(r.key); err != nil {
					return fmt.Errorf("group metadata key: %w", err)
				}
				g := get(k.Group)
				if r.value == nil {
					resetMetadata(g)
					hasMetadata[k.Group] = false
					return nil
				}
				var v kmsg.GroupMetadataValue
				if err := v.ReadFrom(r.value); err != nil {
					return fmt.Errorf("group metadata value of %q: %w", k.Group, err)
				}
				restoreMetadata(g, &v)
				hasMetadata[k.Group] = true
			case cgMetadataType, cgPartitionMetadataType, cgMemberMetadataType, cgTargetMetadataType, cgTargetMemberType, cgCurrentAssignmentType:
				k, err := decodeCGKey(r.key)
				if err != nil {
					return fmt.Errorf("consumer group key: %w", err)
				}
				get(k.group)
				if err := replayConsumerRecord(loads, k, r.value); err != nil {
					return fmt.Errorf("consumer group record %d of %q: %w", k.typ, k.group, err)
				}
			default:
				skipped++
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	for id, l := range loads {
		g := groups[id]
		if g.consumer = l.build(c.cfg.TopicName); g.consumer != nil {
			hasMetadata[id] = true
			g.state = Empty
			if len(g.consumer.members) > 0 {
				g.state = Stable
			}
		}
	}
	if skipped > 0 {
		c.logger.WithFields(logrus.Fields{"partition": s.partition, "records": skipped}).Warn("skipped records of unknown key versions")
	}
	for id, g := range groups {
		if !hasMetadata[id] && len(g.offsets) == 0 {
			delete(groups, id)
		}
	}
	return groups, nil
}

func setCommit(g *group, topic string, partition int32, c commit) {
	ps := g.offsets[topic]
	if ps == nil {
		ps = make(map[int32]commit)
		g.offsets[topic] = ps
	}
	ps[partition] = c
}

// setCommitIfNewer sets c unless the current commit was written after it
// (a plain commit between a transaction's offsets and its marker wins).
func setCommitIfNewer(g *group, topic string, partition int32, c commit) {
	if cur, ok := g.offsets[topic][partition]; ok && cur.seq > c.seq {
		return
	}
	setCommit(g, topic, partition, c)
}

func deleteCommit(g *group, topic string, partition int32) {
	if ps := g.offsets[topic]; ps != nil {
		delete(ps, partition)
		if len(ps) == 0 {
			delete(g.offsets, topic)
		}
	}
}

func resetMetadata(g *group) {
	g.state = Empty
	g.protocolType, g.protocol, g.leader = "", "", ""
	g.generation = 0
	g.members = make(map[string]*member)
	g.static = make(map[string]string)
}

// restoreMetadata applies a stored group record: a group with members comes
// back Stable at its stored generation, as Kafka's loadGroup does, and its
// members must heartbeat within their session timeout to stay.
func restoreMetadata(g *group, v *kmsg.GroupMetadataValue) {
	resetMetadata(g)
	g.protocolType = v.ProtocolType
	g.generation = v.Generation
	if v.Protocol != nil {
		g.protocol = *v.Protocol
	}
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	if v.CurrentStateTimestamp > 0 {
		g.stateTime = time.UnixMilli(v.CurrentStateTimestamp)
	}
	for _, vm := range v.Members {
		m := &member{
			id:               vm.MemberID,
			instanceID:       vm.InstanceID,
			clientID:         vm.ClientID,
			clientHost:       vm.ClientHost,
			sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
			rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
			protocolType:     v.ProtocolType,
			protocols:        []kmsg.JoinGroupRequestProtocol{{Name: g.protocol, Metadata: vm.Subscription}},
			assignment:       vm.Assignment,
		}
		if v.Version < 1 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		g.members[m.id] = m
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
	}
	if len(g.members) > 0 {
		g.state = Stable
		if g.members[g.leader] == nil {
			g.leader = g.sortedMembers()[0].id
		}
	} else {
		g.state = Empty
		g.leader = ""
	}
}
