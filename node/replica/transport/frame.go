package transport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// GroupKey names one partition's Raft group on the wire: the topic's
// 16-byte id (membership.TopicID) and the partition index.
type GroupKey struct {
	Topic     [16]byte
	Partition int32
}

func (g GroupKey) String() string {
	return fmt.Sprintf("%x/%d", g.Topic, g.Partition)
}

const (
	kindMessages byte = 1

	frameLenBytes = 4
	frameHeadLen  = 1 + 2 // kind, count (after the length)
	msgHeadLen    = 16 + 4 + 4
	maxCount      = 1<<16 - 1
)

// Limits bound what one frame may carry. Both sides use the same values;
// a receiver refuses anything over them.
type Limits struct {
	// MaxFrameBytes bounds a frame after its length field.
	MaxFrameBytes int
	// MaxMsgsPerFrame bounds a frame's message count (at most 65535).
	MaxMsgsPerFrame int
	// MaxMsgBytes bounds one encoded raftpb.Message. It must cover raft's
	// MaxSizePerMsg plus the largest single entry (raft sends at least one
	// entry even when it alone is over MaxSizePerMsg), plus a little framing.
	MaxMsgBytes int
	// MaxEntriesPerMsg bounds the entries in one message, so a message of
	// many empty entries cannot make the decoder allocate far more than the
	// message's bytes.
	MaxEntriesPerMsg int
}

// DefaultLimits fit raft's MaxSizePerMsg of 1 MiB with Kafka's default
// 1 MiB batch as the largest entry.
func DefaultLimits() Limits {
	return Limits{
		MaxFrameBytes:    4 << 20,
		MaxMsgsPerFrame:  8192,
		MaxMsgBytes:      (2 << 20) + 64<<10,
		MaxEntriesPerMsg: 16384,
	}
}

func (l Limits) validate() error {
	switch {
	case l.MaxMsgsPerFrame < 1 || l.MaxMsgsPerFrame > maxCount:
		return fmt.Errorf("MaxMsgsPerFrame %d not in 1..%d", l.MaxMsgsPerFrame, maxCount)
	case l.MaxMsgBytes < 64:
		return fmt.Errorf("MaxMsgBytes %d under 64", l.MaxMsgBytes)
	case l.MaxFrameBytes < frameHeadLen+msgHeadLen+l.MaxMsgBytes:
		return fmt.Errorf("MaxFrameBytes %d cannot hold one message of MaxMsgBytes %d", l.MaxFrameBytes, l.MaxMsgBytes)
	case l.MaxFrameBytes > 1<<30:
		return fmt.Errorf("MaxFrameBytes %d over 1 GiB", l.MaxFrameBytes)
	case l.MaxEntriesPerMsg < 1:
		return fmt.Errorf("MaxEntriesPerMsg %d under 1", l.MaxEntriesPerMsg)
	}
	return nil
}

// readFrame reads one frame into *buf (grown at most to MaxFrameBytes) and
// returns its body, after the length field. The length is checked before
// anything is allocated.
func readFrame(r *bufio.Reader, buf *[]byte, lim Limits) ([]byte, error) {
	var lb [frameLenBytes]byte
	if _, err := io.ReadFull(r, lb[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(lb[:]))
	if n < frameHeadLen || n > lim.MaxFrameBytes {
		return nil, fmt.Errorf("frame length %d not in %d..%d", n, frameHeadLen, lim.MaxFrameBytes)
	}
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	body := (*buf)[:n]
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("frame of %d bytes: %w", n, err)
	}
	return body, nil
}

// DecodeFrame decodes one frame body (the bytes after the length field) and
// calls fn for each message in order. It never panics on any input: every
// count and length is checked against lim and the bytes left, and a
// message is only handed on once it has decoded and passed the checks.
// An error from fn stops decoding and is returned.
func DecodeFrame(body []byte, lim Limits, fn func(GroupKey, *raftpb.Message) error) error {
	if len(body) < frameHeadLen {
		return fmt.Errorf("frame of %d bytes is shorter than its header", len(body))
	}
	if len(body) > lim.MaxFrameBytes {
		return fmt.Errorf("frame of %d bytes over the %d-byte limit", len(body), lim.MaxFrameBytes)
	}
	if body[0] != kindMessages {
		return fmt.Errorf("unknown frame kind %d", body[0])
	}
	count := int(binary.BigEndian.Uint16(body[1:3]))
	if count > lim.MaxMsgsPerFrame {
		return fmt.Errorf("frame of %d messages over the limit of %d", count, lim.MaxMsgsPerFrame)
	}
	rest := body[frameHeadLen:]
	for i := 0; i < count; i++ {
		if len(rest) < msgHeadLen {
			return fmt.Errorf("message %d of %d: %d bytes left, under a message header", i, count, len(rest))
		}
		var g GroupKey
		copy(g.Topic[:], rest[:16])
		g.Partition = int32(binary.BigEndian.Uint32(rest[16:20]))
		n := int(binary.BigEndian.Uint32(rest[20:24]))
		rest = rest[msgHeadLen:]
		if n > lim.MaxMsgBytes || n > len(rest) {
			return fmt.Errorf("message %d of %d (group %s): length %d over the limit %d or the %d bytes left", i, count, g, n, lim.MaxMsgBytes, len(rest))
		}
		m, err := decodeMsg(rest[:n], lim)
		if err != nil {
			return fmt.Errorf("message %d of %d (group %s): %w", i, count, g, err)
		}
		rest = rest[n:]
		if err := fn(g, m); err != nil {
			return err
		}
	}
	if len(rest) != 0 {
		return fmt.Errorf("%d bytes after the frame's %d messages", len(rest), count)
	}
	return nil
}

var errResponses = errors.New("message carries nested responses (local storage messages only)")

// decodeMsg unmarshals one message after a cheap scan of its top-level
// fields: entries are counted against MaxEntriesPerMsg before protobuf
// allocates one struct per entry, and nested responses (raft uses them only
// for local storage messages) are refused, so a crafted message cannot
// recurse or fan out.
func decodeMsg(b []byte, lim Limits) (*raftpb.Message, error) {
	entries := 0
	for scan := b; len(scan) > 0; {
		num, typ, n := protowire.ConsumeTag(scan)
		if n < 0 {
			return nil, fmt.Errorf("field tag: %w", protowire.ParseError(n))
		}
		scan = scan[n:]
		m := protowire.ConsumeFieldValue(num, typ, scan)
		if m < 0 {
			return nil, fmt.Errorf("field %d: %w", num, protowire.ParseError(m))
		}
		scan = scan[m:]
		switch num {
		case 7: // entries
			if entries++; entries > lim.MaxEntriesPerMsg {
				return nil, fmt.Errorf("more than %d entries", lim.MaxEntriesPerMsg)
			}
		case 14: // responses
			return nil, errResponses
		}
	}
	m := new(raftpb.Message)
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("decode raft message: %w", err)
	}
	if m.Type == nil {
		return nil, errors.New("raft message without a type")
	}
	// Known types first: raft.IsLocalMsg indexes an array with the type and
	// panics on a negative one, which protobuf decodes happily.
	if _, ok := raftpb.MessageType_name[int32(m.GetType())]; !ok {
		return nil, fmt.Errorf("unknown raft message type %d", m.GetType())
	}
	if raft.IsLocalMsg(m.GetType()) {
		return nil, fmt.Errorf("raft-local message type %s from the network", m.GetType())
	}
	return m, nil
}

// frameBuf builds frames in one growing buffer; each frame starts with a
// reserved header that finish fills in.
type frameBuf struct {
	b      []byte
	start  int // offset of the open frame's length field, -1 when none is open
	count  int // messages in the open frame
	frames int // frames begun since reset
}

func (f *frameBuf) reset() {
	f.b = f.b[:0]
	f.start = -1
	f.count = 0
	f.frames = 0
}

func (f *frameBuf) open() {
	f.start = len(f.b)
	f.b = append(f.b, 0, 0, 0, 0, kindMessages, 0, 0)
	f.count = 0
	f.frames++
}

// openLen is the open frame's length so far, after its length field.
func (f *frameBuf) openLen() int {
	if f.start < 0 {
		return 0
	}
	return len(f.b) - f.start - frameLenBytes
}

// finish writes the open frame's length and count.
func (f *frameBuf) finish() {
	if f.start < 0 {
		return
	}
	binary.BigEndian.PutUint32(f.b[f.start:], uint32(len(f.b)-f.start-frameLenBytes))
	binary.BigEndian.PutUint16(f.b[f.start+5:], uint16(f.count))
	f.start = -1
}

// appendMsg encodes m for group g into the open frame (opening a new one
// when this one would go over lim) and returns the bytes it took, or an
// error (and no change) when the encoded message is over MaxMsgBytes.
func (f *frameBuf) appendMsg(g GroupKey, m *raftpb.Message, lim Limits) (int, error) {
	if f.start < 0 || f.count == lim.MaxMsgsPerFrame {
		f.finish()
		f.open()
	}
	before := len(f.b)
	at := before
	f.b = append(f.b, g.Topic[:]...)
	f.b = binary.BigEndian.AppendUint32(f.b, uint32(g.Partition))
	f.b = append(f.b, 0, 0, 0, 0)
	var err error
	f.b, err = proto.MarshalOptions{}.MarshalAppend(f.b, m)
	if err != nil {
		f.b = f.b[:before]
		return 0, fmt.Errorf("encode raft message: %w", err)
	}
	n := len(f.b) - at - msgHeadLen
	if n > lim.MaxMsgBytes {
		f.b = f.b[:before]
		return 0, fmt.Errorf("raft message of %d bytes over the %d-byte limit", n, lim.MaxMsgBytes)
	}
	binary.BigEndian.PutUint32(f.b[at+20:], uint32(n))
	if f.openLen() > lim.MaxFrameBytes && f.count > 0 {
		// Move this message into a frame of its own.
		moved := append([]byte(nil), f.b[at:]...)
		f.b = f.b[:at]
		f.finish()
		f.open()
		f.b = append(f.b, moved...)
	}
	f.count++
	return len(f.b) - before, nil
}
