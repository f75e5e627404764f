package group

import (
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// cgSeeds are one record of every consumer-group key type, as the
// coordinator writes them, and one tombstone.
func cgSeeds() []record {
	inst, asg := "i-1", "range"
	parts := []cgParts{{id: topicID848("t"), partitions: []int32{0, 2}}, {id: topicID848("u"), partitions: []int32{}}}
	return []record{
		{key: cgKey{cgMetadataType, "g", ""}.encode(), value: encodeCGMetadata(7)},
		{key: cgKey{cgPartitionMetadataType, "g", ""}.encode(), value: encodeCGPartitionMetadata([]cgTopic{{topicID848("t"), "t", 4}})},
		{key: cgKey{cgMemberMetadataType, "g", "m"}.encode(), value: encodeCGMemberMetadata(cgMemberMeta{instanceID: &inst, clientID: "c", clientHost: "/h", subscribed: []string{"t"}, rebalanceTimeoutMs: 5000, assignor: &asg})},
		{key: cgKey{cgTargetMetadataType, "g", ""}.encode(), value: encodeCGTargetMetadata(7)},
		{key: cgKey{cgTargetMemberType, "g", "m"}.encode(), value: encodeCGTargetMember(parts)},
		{key: cgKey{cgCurrentAssignmentType, "g", "m"}.encode(), value: encodeCGCurrent(cgCurrent{epoch: 7, prevEpoch: 6, state: 1, assigned: parts[:1], revoking: parts[1:]})},
		{key: cgKey{cgCurrentAssignmentType, "g", "gone"}.encode()},
	}
}

// FuzzCGRecordRoundTrip: every consumer-group value decodes back to what
// was encoded, and its key too.
func FuzzCGRecordRoundTrip(f *testing.F) {
	f.Add("g", "m", int32(3), int32(2), "t", []byte{0, 1, 5}, "", true)
	f.Add("", "", int32(-1), int32(0), "", []byte{}, "i", false)
	f.Fuzz(func(t *testing.T, group, member string, epoch, prev int32, topic string, ps []byte, opt string, hasOpt bool) {
		var p *string
		if hasOpt {
			p = &opt
		}
		partitions := []int32{}
		for _, b := range ps {
			partitions = append(partitions, int32(b)*int32(epoch|1))
		}
		var id [16]byte
		copy(id[:], topic)
		parts := []cgParts{{id: id, partitions: partitions}}
		for typ := int16(cgMetadataType); typ <= cgCurrentAssignmentType; typ++ {
			k := cgKey{typ, group, member}
			switch typ {
			case cgMetadataType, cgPartitionMetadataType, cgTargetMetadataType:
				k.member = ""
			}
			got, err := decodeCGKey(k.encode())
			if err != nil || got != k {
				t.Fatalf("key %+v decoded as %+v, %v", k, got, err)
			}
		}
		if e, err := decodeCGMetadata(encodeCGMetadata(epoch)); err != nil || e != epoch {
			t.Fatalf("metadata %d -> %d, %v", epoch, e, err)
		}
		if e, err := decodeCGTargetMetadata(encodeCGTargetMetadata(epoch)); err != nil || e != epoch {
			t.Fatalf("target metadata %d -> %d, %v", epoch, e, err)
		}
		topics := []cgTopic{{id: id, name: topic, partitions: prev}}
		if ts, err := decodeCGPartitionMetadata(encodeCGPartitionMetadata(topics)); err != nil || !reflect.DeepEqual(ts, topics) {
			t.Fatalf("partition metadata %v -> %v, %v", topics, ts, err)
		}
		mm := cgMemberMeta{instanceID: p, rackID: p, clientID: member, clientHost: group, subscribed: []string{topic, opt}, regex: p, rebalanceTimeoutMs: prev, assignor: p}
		if got, err := decodeCGMemberMetadata(encodeCGMemberMetadata(mm)); err != nil || !memberMetaEqual(got, mm) {
			t.Fatalf("member metadata %+v -> %+v, %v", mm, got, err)
		}
		if got, err := decodeCGTargetMember(encodeCGTargetMember(parts)); err != nil || !reflect.DeepEqual(got, parts) {
			t.Fatalf("target member %v -> %v, %v", parts, got, err)
		}
		cur := cgCurrent{epoch: epoch, prevEpoch: prev, state: int8(len(ps)), assigned: parts, revoking: parts}
		if got, err := decodeCGCurrent(encodeCGCurrent(cur)); err != nil || !reflect.DeepEqual(got, cur) {
			t.Fatalf("current assignment %+v -> %+v, %v", cur, got, err)
		}
	})
}

// FuzzCGRecordDecode: any bytes given to the consumer-group decoders
// return an error or a value, never a panic, and replaying them in a log
// loads or fails cleanly.
func FuzzCGRecordDecode(f *testing.F) {
	for _, r := range cgSeeds() {
		f.Add(r.key, r.value)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		_, _ = decodeCGKey(key)
		_, _ = decodeCGMetadata(value)
		_, _ = decodeCGPartitionMetadata(value)
		_, _ = decodeCGMemberMetadata(value)
		_, _ = decodeCGTargetMember(value)
		_, _ = decodeCGCurrent(value)
		log := NewMemLog()
		log.parts[0] = [][]byte{encodeBatch(cgSeeds(), 1), encodeBatch([]record{{key: key, value: value}}, 2)}
		cfg := DefaultConfig()
		cfg.Partitions = 1
		c, err := New(cfg, log)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.Load(0)
	})
}

// TestConsumerGroupSurvivesReload: after the coordinator reloads the
// partition, both members heartbeat on with their ids and epochs, keep
// their partitions, and a member that was revoking still has to finish.
func TestConsumerGroupSurvivesReload(t *testing.T) {
	h := newHarness848(t, topics848{"t": 4})
	sub := []string{"t"}
	a := h.cgh("g", "a", 0, sub, []int32{})
	b := h.cgh("g", "b", 0, sub, []int32{})
	// a must give up two partitions; b waits for them.
	a2 := h.cgh("g", "a", a.MemberEpoch, nil, partitionsOf(a))
	if a2.ErrorCode != 0 || len(partitionsOf(a2)) != 2 {
		t.Fatalf("a after b joined: %+v", a2)
	}
	h.start() // a new coordinator over the same log

	b2 := h.cgh("g", "b", b.MemberEpoch, nil, []int32{})
	if b2.ErrorCode != 0 || b2.MemberEpoch != b.MemberEpoch {
		t.Fatalf("b after reload: code %d epoch %d, want epoch %d", b2.ErrorCode, b2.MemberEpoch, b.MemberEpoch)
	}
	if len(partitionsOf(b2)) != 0 {
		t.Fatalf("b got %v while a still revokes", partitionsOf(b2))
	}
	a3 := h.cgh("g", "a", a.MemberEpoch, nil, partitionsOf(a2))
	if a3.ErrorCode != 0 || a3.MemberEpoch != b.MemberEpoch {
		t.Fatalf("a after reload: code %d epoch %d, want %d", a3.ErrorCode, a3.MemberEpoch, b.MemberEpoch)
	}
	b3 := h.cgh("g", "b", b2.MemberEpoch, nil, []int32{})
	got := append(partitionsOf(a3), partitionsOf(b3)...)
	slices.Sort(got)
	if b3.ErrorCode != 0 || !slices.Equal(got, []int32{0, 1, 2, 3}) {
		t.Fatalf("after reload a %v b %v (code %d)", partitionsOf(a3), partitionsOf(b3), b3.ErrorCode)
	}
	h.start()
	if d := h.describe848("g"); d.state != "Stable" || d.members != 2 {
		t.Fatalf("after second reload: %+v", d)
	}
	// Both leave: the group is empty, and deleting it leaves nothing.
	h.cgh("g", "a", -1, nil, nil)
	h.cgh("g", "b", -1, nil, nil)
	h.start()
	if d := h.describe848("g"); d.state != "Empty" || d.members != 0 {
		t.Fatalf("after leaving and reload: %+v", d)
	}
	if code := h.c.deleteGroup("g"); code != 0 {
		t.Fatalf("delete: %d", code)
	}
	h.start()
	s, _ := h.c.lockShard("g")
	_, there := s.groups["g"]
	s.mu.Unlock()
	if there {
		t.Fatal("deleted group back after reload")
	}
}

// TestConsumerHeartbeatAppendFails: a heartbeat whose records cannot be
// stored gets an error and changes nothing; the member then goes on.
func TestConsumerHeartbeatAppendFails(t *testing.T) {
	h := newHarness848(t, topics848{"t": 2})
	sub := []string{"t"}
	a := h.cgh("g", "a", 0, sub, []int32{})
	h.log.SetFailAppends(kerr.NotLeaderForPartition)
	if r := h.cgh("g", "b", 0, sub, []int32{}); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("join with failing log: %+v", r)
	}
	if r := h.cgh("g2", "x", 0, sub, []int32{}); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("new group with failing log: %+v", r)
	}
	h.log.SetFailAppends(nil)
	if d := h.describe848("g"); d.members != 1 {
		t.Fatalf("failed join left %+v", d)
	}
	s, _ := h.c.lockShard("g2")
	_, there := s.groups["g2"]
	s.mu.Unlock()
	if there {
		t.Fatal("failed first heartbeat created g2")
	}
	a2 := h.cgh("g", "a", a.MemberEpoch, nil, partitionsOf(a))
	if a2.ErrorCode != 0 || a2.MemberEpoch != a.MemberEpoch {
		t.Fatalf("a after failed join: %+v", a2)
	}
}

type describedCG struct {
	state   string
	members int
}

func (h *harness) describe848(group string) describedCG {
	h.t.Helper()
	s, code := h.c.lockShard(group)
	if code != 0 {
		h.t.Fatalf("lock %s: %d", group, code)
	}
	defer s.mu.Unlock()
	g := s.groups[group]
	if g == nil || g.consumer == nil {
		h.t.Fatalf("group %s not a consumer group: %+v", group, g)
	}
	return describedCG{g.consumerState(), len(g.consumer.members)}
}

// TestEmptyConsumerGroupTurnedClassicReloads: an empty consumer group that
// a classic member joins is classic after a reload too, its consumer
// records tombstoned when it turned.
func TestEmptyConsumerGroupTurnedClassicReloads(t *testing.T) {
	h := newHarness848(t, topics848{"t": 2})
	a := h.cgh("g", "a", 0, []string{"t"}, []int32{})
	if r := h.cgh("g", "a", -1, nil, nil); a.ErrorCode != 0 || r.ErrorCode != 0 {
		t.Fatalf("join %d, leave %d", a.ErrorCode, r.ErrorCode)
	}
	ids, gen := h.stableGroup("g", 1)
	h.start()
	s, _ := h.c.lockShard("g")
	g := s.groups["g"]
	classic := g != nil && g.consumer == nil && g.generation == gen && g.members[ids[0]] != nil
	s.mu.Unlock()
	if !classic {
		t.Fatalf("after reload the group is %+v", g)
	}
}
