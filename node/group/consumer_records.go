package group

import (
	"encoding/binary"
	"errors"
)

// A consumer-protocol group is stored in __consumer_offsets as Kafka stores
// it (KIP-848), one record per piece of state so that a heartbeat rewrites
// only what it changed:
//
//	key 3 (group)          ConsumerGroupMetadata              value v0: group epoch
//	key 4 (group)          ConsumerGroupPartitionMetadata     value v0: subscribed topics
//	key 5 (group, member)  ConsumerGroupMemberMetadata        value v0: subscription
//	key 6 (group)          ConsumerGroupTargetAssignmentMetadata value v0: assignment epoch
//	key 7 (group, member)  ConsumerGroupTargetAssignmentMember   value v0: target partitions
//	key 8 (group, member)  ConsumerGroupCurrentMemberAssignment  value v0: epochs, owned and revoking partitions
//
// Keys are not flexible (int16 version = record type, int16-length
// strings); values are flexible version 0 (compact strings and arrays,
// empty tagged fields).
const (
	cgMetadataType          = 3
	cgPartitionMetadataType = 4
	cgMemberMetadataType    = 5
	cgTargetMetadataType    = 6
	cgTargetMemberType      = 7
	cgCurrentAssignmentType = 8
)

// cgKey is a decoded consumer-group record key; member is empty for the
// group-level types.
type cgKey struct {
	typ    int16
	group  string
	member string
}

func (k cgKey) encode() []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(k.typ))
	b = appendString(b, k.group)
	switch k.typ {
	case cgMemberMetadataType, cgTargetMemberType, cgCurrentAssignmentType:
		b = appendString(b, k.member)
	}
	return b
}

func decodeCGKey(b []byte) (cgKey, error) {
	r := &reader{b: b}
	k := cgKey{typ: r.int16()}
	k.group = r.string()
	switch k.typ {
	case cgMemberMetadataType, cgTargetMemberType, cgCurrentAssignmentType:
		k.member = r.string()
	case cgMetadataType, cgPartitionMetadataType, cgTargetMetadataType:
	default:
		return cgKey{}, errors.New("not a consumer group key")
	}
	return k, r.done()
}

// cgTopic is one entry of ConsumerGroupPartitionMetadataValue.Topics.
type cgTopic struct {
	id         [16]byte
	name       string
	partitions int32
}

// cgParts is a TopicPartitions list of the assignment values.
type cgParts struct {
	id         [16]byte
	partitions []int32
}

type cgMemberMeta struct {
	instanceID, rackID   *string
	clientID, clientHost string
	subscribed           []string
	regex                *string
	rebalanceTimeoutMs   int32
	assignor             *string
}

type cgCurrent struct {
	epoch, prevEpoch int32
	state            int8
	assigned         []cgParts
	revoking         []cgParts
}

func encodeCGMetadata(epoch int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(epoch))
	return binary.AppendUvarint(b, 0)
}

func decodeCGMetadata(b []byte) (int32, error) {
	r := &reader{b: b}
	r.version()
	e := r.int32()
	r.tags()
	return e, r.done()
}

// encodeCGTargetMetadata is ConsumerGroupTargetAssignmentMetadataValue,
// laid out as the group metadata value: one int32 epoch.
func encodeCGTargetMetadata(epoch int32) []byte { return encodeCGMetadata(epoch) }

func decodeCGTargetMetadata(b []byte) (int32, error) { return decodeCGMetadata(b) }

// encodeCGPartitionMetadata is ConsumerGroupPartitionMetadataValue as of
// Kafka 4.0 (no epoch; the per-partition racks, deprecated, left empty).
func encodeCGPartitionMetadata(topics []cgTopic) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.AppendUvarint(b, uint64(len(topics)+1))
	for _, t := range topics {
		b = append(b, t.id[:]...)
		b = appendCompactString(b, t.name)
		b = binary.BigEndian.AppendUint32(b, uint32(t.partitions))
		b = binary.AppendUvarint(b, 1) // no partition racks
		b = binary.AppendUvarint(b, 0)
	}
	return binary.AppendUvarint(b, 0)
}

func decodeCGPartitionMetadata(b []byte) ([]cgTopic, error) {
	r := &reader{b: b}
	r.version()
	n := r.arrayLen()
	topics := []cgTopic{}
	for i := 0; i < n && r.err == nil; i++ {
		t := cgTopic{id: r.uuid(), name: r.compactString(), partitions: r.int32()}
		racks := r.arrayLen()
		for j := 0; j < racks && r.err == nil; j++ {
			r.int32()
			for k, nr := 0, r.arrayLen(); k < nr && r.err == nil; k++ {
				r.compactString()
			}
			r.tags()
		}
		r.tags()
		topics = append(topics, t)
	}
	r.tags()
	return topics, r.done()
}

func encodeCGMemberMetadata(m cgMemberMeta) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = appendCompactNullableString(b, m.instanceID)
	b = appendCompactNullableString(b, m.rackID)
	b = appendCompactString(b, m.clientID)
	b = appendCompactString(b, m.clientHost)
	b = binary.AppendUvarint(b, uint64(len(m.subscribed)+1))
	for _, s := range m.subscribed {
		b = appendCompactString(b, s)
	}
	b = appendCompactNullableString(b, m.regex)
	b = binary.BigEndian.AppendUint32(b, uint32(m.rebalanceTimeoutMs))
	b = appendCompactNullableString(b, m.assignor)
	return binary.AppendUvarint(b, 0)
}

func decodeCGMemberMetadata(b []byte) (cgMemberMeta, error) {
	r := &reader{b: b}
	r.version()
	var m cgMemberMeta
	m.instanceID = r.compactNullableString()
	m.rackID = r.compactNullableString()
	m.clientID = r.compactString()
	m.clientHost = r.compactString()
	n := r.arrayLen()
	for i := 0; i < n && r.err == nil; i++ {
		m.subscribed = append(m.subscribed, r.compactString())
	}
	m.regex = r.compactNullableString()
	m.rebalanceTimeoutMs = r.int32()
	m.assignor = r.compactNullableString()
	r.tags() // ClassicMemberMetadata (tag 0) is for classic members, which Spool keeps elsewhere
	return m, r.done()
}

func appendCGParts(b []byte, ps []cgParts) []byte {
	b = binary.AppendUvarint(b, uint64(len(ps)+1))
	for _, p := range ps {
		b = append(b, p.id[:]...)
		b = binary.AppendUvarint(b, uint64(len(p.partitions)+1))
		for _, n := range p.partitions {
			b = binary.BigEndian.AppendUint32(b, uint32(n))
		}
		b = binary.AppendUvarint(b, 0)
	}
	return b
}

func (r *reader) cgParts() []cgParts {
	n := r.arrayLen()
	out := []cgParts{}
	for i := 0; i < n && r.err == nil; i++ {
		p := cgParts{id: r.uuid(), partitions: []int32{}}
		for j, np := 0, r.arrayLen(); j < np && r.err == nil; j++ {
			p.partitions = append(p.partitions, r.int32())
		}
		r.tags()
		out = append(out, p)
	}
	return out
}

// encodeCGTargetMember is ConsumerGroupTargetAssignmentMemberValue.
func encodeCGTargetMember(ps []cgParts) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = appendCGParts(b, ps)
	return binary.AppendUvarint(b, 0)
}

func decodeCGTargetMember(b []byte) ([]cgParts, error) {
	r := &reader{b: b}
	r.version()
	ps := r.cgParts()
	r.tags()
	return ps, r.done()
}

func encodeCGCurrent(c cgCurrent) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(c.epoch))
	b = binary.BigEndian.AppendUint32(b, uint32(c.prevEpoch))
	b = append(b, byte(c.state))
	b = appendCGParts(b, c.assigned)
	b = appendCGParts(b, c.revoking)
	return binary.AppendUvarint(b, 0)
}

func decodeCGCurrent(b []byte) (cgCurrent, error) {
	r := &reader{b: b}
	r.version()
	var c cgCurrent
	c.epoch = r.int32()
	c.prevEpoch = r.int32()
	c.state = int8(r.int8())
	c.assigned = r.cgParts()
	c.revoking = r.cgParts()
	r.tags()
	return c, r.done()
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func appendCompactString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)+1))
	return append(b, s...)
}

func appendCompactNullableString(b []byte, s *string) []byte {
	if s == nil {
		return binary.AppendUvarint(b, 0)
	}
	return appendCompactString(b, *s)
}

var errCGRecord = errors.New("malformed consumer group record")

// reader decodes Kafka's primitive types; the first short read sets err
// and every later read returns zero values.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.err = errCGRecord
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) int8() byte {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) int16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *reader) int32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *reader) uuid() (id [16]byte) {
	copy(id[:], r.take(16))
	return id
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errCGRecord
		return 0
	}
	r.b = r.b[n:]
	return v
}

// version reads a value's version, of which only 0 exists.
func (r *reader) version() {
	if v := r.int16(); v != 0 && r.err == nil {
		r.err = errCGRecord
	}
}

func (r *reader) string() string {
	n := r.int16()
	return string(r.take(int(n)))
}

// arrayLen reads a compact array length; null reads as empty. The length
// is bounded by the bytes left, so garbage cannot make a caller loop long.
func (r *reader) arrayLen() int {
	n := r.uvarint()
	if n > uint64(len(r.b))+1 {
		r.err = errCGRecord
		return 0
	}
	return max(int(n)-1, 0)
}

func (r *reader) compactString() string {
	n := r.uvarint()
	if n == 0 {
		if r.err == nil {
			r.err = errCGRecord
		}
		return ""
	}
	if n-1 > uint64(len(r.b)) {
		r.err = errCGRecord
		return ""
	}
	return string(r.take(int(n - 1)))
}

func (r *reader) compactNullableString() *string {
	n := r.uvarint()
	if n == 0 || r.err != nil {
		return nil
	}
	if n-1 > uint64(len(r.b)) {
		r.err = errCGRecord
		return nil
	}
	s := string(r.take(int(n - 1)))
	return &s
}

// tags skips a tagged-field section.
func (r *reader) tags() {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err = errCGRecord
		return
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		r.uvarint()
		size := r.uvarint()
		if size > uint64(len(r.b)) {
			r.err = errCGRecord
			return
		}
		r.take(int(size))
	}
}

func (r *reader) done() error {
	if r.err == nil && len(r.b) > 0 {
		r.err = errCGRecord
	}
	return r.err
}
