package leadership

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
)

// Message is one pull answer: a node's claims, whole (Full) or the changes
// since version Since of the same incarnation.
type Message struct {
	Broker  int32  // the claiming node, leader of every claim
	Inc     uint64 // the node's incarnation (random per process)
	Version uint64 // the version of the node's claims this message brings the reader to
	Full    bool
	Since   uint64  // a delta's base version
	Claims  []Claim // new or changed (all of them when Full)
	Removed []Key   // no longer led (a delta only)
}

// magic opens a message; magicV1 one without the claims' voters, which
// a node of an earlier version sends (and is all it reads: during a
// rolling upgrade it ignores the newer nodes' claims until upgraded).
var (
	magic   = [4]byte{'S', 'L', 'D', '2'}
	magicV1 = [4]byte{'S', 'L', 'D', '1'}
)

// MaxMessageBytes bounds an encoded message a peer may send: far above a
// node leading 100,000 partitions (~1 MB).
const MaxMessageBytes = 16 << 20

// Encode lays m out: the magic, a header of varints, then the claims and
// removals grouped by topic id (sorted, so equal messages encode equally).
func Encode(m Message) []byte {
	b := append([]byte(nil), magic[:]...)
	b = binary.AppendUvarint(b, uint64(m.Broker))
	b = binary.AppendUvarint(b, m.Inc)
	b = binary.AppendUvarint(b, m.Version)
	if m.Full {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.AppendUvarint(b, m.Since)

	claims := append([]Claim(nil), m.Claims...)
	sort.Slice(claims, func(i, j int) bool { return less(claims[i].Key(), claims[j].Key()) })
	b = appendGroups(b, len(claims), func(i int) Key { return claims[i].Key() }, func(b []byte, i int) []byte {
		c := claims[i]
		b = binary.AppendUvarint(b, uint64(c.Partition))
		b = binary.AppendUvarint(b, uint64(c.Epoch))
		b = appendIDs(b, c.ISR)
		b = appendIDs(b, c.Offline)
		return appendIDs(b, c.Voters)
	})
	removed := append([]Key(nil), m.Removed...)
	sort.Slice(removed, func(i, j int) bool { return less(removed[i], removed[j]) })
	return appendGroups(b, len(removed), func(i int) Key { return removed[i] }, func(b []byte, i int) []byte {
		return binary.AppendUvarint(b, uint64(removed[i].Partition))
	})
}

func less(a, b Key) bool {
	if a.Topic != b.Topic {
		return string(a.Topic[:]) < string(b.Topic[:])
	}
	return a.Partition < b.Partition
}

// appendGroups writes n sorted items as runs per topic: the number of
// topics, then per topic its id, its item count and the items.
func appendGroups(b []byte, n int, key func(int) Key, item func([]byte, int) []byte) []byte {
	topics := 0
	for i := 0; i < n; i++ {
		if i == 0 || key(i).Topic != key(i-1).Topic {
			topics++
		}
	}
	b = binary.AppendUvarint(b, uint64(topics))
	for i := 0; i < n; {
		j := i
		for j < n && key(j).Topic == key(i).Topic {
			j++
		}
		t := key(i).Topic
		b = append(b, t[:]...)
		b = binary.AppendUvarint(b, uint64(j-i))
		for ; i < j; i++ {
			b = item(b, i)
		}
	}
	return b
}

func appendIDs(b []byte, ids []int32) []byte {
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = binary.AppendUvarint(b, uint64(id))
	}
	return b
}

// errShort is any read past the end of a message.
var errShort = errors.New("truncated")

type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint(max uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	switch {
	case n == 0:
		r.err = errShort
		return 0
	case n < 0:
		r.err = errors.New("varint overflows 64 bits")
		return 0
	case v > max:
		r.err = fmt.Errorf("value %d over %d", v, max)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) int32() int32 { return int32(r.uvarint(math.MaxInt32)) }

// count reads an element count, each element taking at least minBytes:
// a count the remaining bytes cannot hold is refused before anything is
// allocated for it.
func (r *reader) count(minBytes int) int {
	n := r.uvarint(math.MaxInt32)
	if r.err == nil && n > uint64(len(r.b)/minBytes) {
		r.err = fmt.Errorf("count %d over what %d bytes hold", n, len(r.b))
		return 0
	}
	return int(n)
}

func (r *reader) topic() (t [16]byte) {
	if r.err == nil && len(r.b) < 16 {
		r.err = errShort
	}
	if r.err != nil {
		return t
	}
	copy(t[:], r.b)
	r.b = r.b[16:]
	return t
}

func (r *reader) ids() []int32 {
	n := r.count(1)
	if r.err == nil && n > MaxReplicas {
		r.err = fmt.Errorf("%d replicas in a list, over %d", n, MaxReplicas)
	}
	if r.err != nil {
		return nil
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = r.int32()
	}
	return out
}

// Decode parses an encoded message, refusing anything malformed: every
// claim's leader is the message's broker.
func Decode(b []byte) (Message, error) {
	var m Message
	if len(b) > MaxMessageBytes {
		return m, fmt.Errorf("leadership message of %d bytes, over %d", len(b), MaxMessageBytes)
	}
	if len(b) < len(magic) || ([4]byte(b[:4]) != magic && [4]byte(b[:4]) != magicV1) {
		return m, errors.New("not a leadership message (bad magic)")
	}
	voters := [4]byte(b[:4]) == magic
	r := &reader{b: b[4:]}
	m.Broker = r.int32()
	m.Inc = r.uvarint(math.MaxUint64)
	m.Version = r.uvarint(math.MaxUint64)
	switch full := r.uvarint(1); {
	case r.err != nil:
	default:
		m.Full = full == 1
	}
	m.Since = r.uvarint(math.MaxUint64)
	// A claim takes at least 4 bytes (partition, epoch, two list lengths).
	for topics := r.count(17); r.err == nil && topics > 0; topics-- {
		t := r.topic()
		for n := r.count(4); r.err == nil && n > 0; n-- {
			c := Claim{Topic: t, Partition: r.int32(), Leader: m.Broker, Epoch: r.int32()}
			c.ISR = r.ids()
			c.Offline = r.ids()
			if voters {
				if v := r.ids(); len(v) > 0 {
					c.Voters = v
				}
			}
			m.Claims = append(m.Claims, c)
		}
	}
	for topics := r.count(17); r.err == nil && topics > 0; topics-- {
		t := r.topic()
		for n := r.count(1); r.err == nil && n > 0; n-- {
			m.Removed = append(m.Removed, Key{Topic: t, Partition: r.int32()})
		}
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d trailing bytes", len(r.b))
	}
	if r.err != nil {
		return Message{}, fmt.Errorf("decode leadership message: %w", r.err)
	}
	if m.Full && len(m.Removed) > 0 {
		return Message{}, errors.New("decode leadership message: a full message with removals")
	}
	return m, nil
}
