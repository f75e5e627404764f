package transport

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func u64(v uint64) *uint64 { return &v }

func msg(typ raftpb.MessageType, from, to, term uint64) *raftpb.Message {
	return &raftpb.Message{Type: typ.Enum(), From: u64(from), To: u64(to), Term: u64(term)}
}

func group(i int) GroupKey {
	g := GroupKey{Partition: int32(i % 7)}
	binary.BigEndian.PutUint32(g.Topic[:], uint32(i/7))
	return g
}

// encodeFrames builds what a link would write for msgs.
func encodeFrames(t testing.TB, lim Limits, gs []GroupKey, msgs []*raftpb.Message) []byte {
	t.Helper()
	var f frameBuf
	f.reset()
	for i, m := range msgs {
		if _, err := f.appendMsg(gs[i], m, lim); err != nil {
			t.Fatal(err)
		}
	}
	f.finish()
	return f.b
}

type decoded struct {
	g GroupKey
	m *raftpb.Message
}

// decodeAll reads every frame of b as a receiver would.
func decodeAll(t testing.TB, b []byte, lim Limits) (out []decoded, frames int) {
	t.Helper()
	r := bufio.NewReader(bytes.NewReader(b))
	var buf []byte
	for r.Buffered() > 0 || frames == 0 {
		body, err := readFrame(r, &buf, lim)
		if err != nil {
			t.Fatalf("frame %d: %v", frames, err)
		}
		frames++
		if err := DecodeFrame(body, lim, func(g GroupKey, m *raftpb.Message) error {
			out = append(out, decoded{g, m})
			return nil
		}); err != nil {
			t.Fatalf("frame %d: %v", frames, err)
		}
		if _, err := r.Peek(1); err != nil {
			break
		}
	}
	return out, frames
}

func TestFrameRoundTripSplitsByCountAndBytes(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxMsgsPerFrame = 100
	lim.MaxMsgBytes = 4 << 10
	lim.MaxFrameBytes = 16 << 10
	var gs []GroupKey
	var msgs []*raftpb.Message
	for i := 0; i < 1000; i++ {
		m := msg(raftpb.MsgApp, 1, 2, uint64(i))
		if i%10 == 0 { // some messages with a 3 KiB entry, to fill frames by bytes
			m.Entries = []*raftpb.Entry{{Term: u64(1), Index: u64(uint64(i)), Data: bytes.Repeat([]byte{byte(i)}, 3<<10)}}
		}
		gs = append(gs, group(i))
		msgs = append(msgs, m)
	}
	out, frames := decodeAll(t, encodeFrames(t, lim, gs, msgs), lim)
	if len(out) != len(msgs) {
		t.Fatalf("decoded %d messages, sent %d", len(out), len(msgs))
	}
	for i, d := range out {
		if d.g != gs[i] || !proto.Equal(d.m, msgs[i]) {
			t.Fatalf("message %d: got %v %v, sent %v %v", i, d.g, d.m, gs[i], msgs[i])
		}
	}
	// 100 messages at ~3 KiB + 900 small: the byte bound splits more than the count bound.
	if frames < 10 || frames > 40 {
		t.Fatalf("%d frames for 1000 messages (count bound 100, byte bound 16 KiB)", frames)
	}
}

func TestAppendMsgRefusesOversizedMessage(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxMsgBytes = 1 << 10
	lim.MaxFrameBytes = 4 << 10
	var f frameBuf
	f.reset()
	m := msg(raftpb.MsgApp, 1, 2, 1)
	m.Entries = []*raftpb.Entry{{Data: make([]byte, 2<<10)}}
	if _, err := f.appendMsg(group(1), m, lim); err == nil || !strings.Contains(err.Error(), "over the 1024-byte limit") {
		t.Fatalf("oversized message: err %v", err)
	}
	if _, err := f.appendMsg(group(1), msg(raftpb.MsgHeartbeat, 1, 2, 1), lim); err != nil {
		t.Fatal(err)
	}
	f.finish()
	out, _ := decodeAll(t, f.b, lim)
	if len(out) != 1 || out[0].m.GetType() != raftpb.MsgHeartbeat {
		t.Fatalf("after a refused message the frame holds %v", out)
	}
}

// A frame header claiming a huge length is refused before anything is
// allocated for it.
func TestReadFrameBoundsBeforeAllocating(t *testing.T) {
	lim := DefaultLimits()
	for _, n := range []uint32{0, 2, uint32(lim.MaxFrameBytes + 1), 1<<32 - 1} {
		hdr := binary.BigEndian.AppendUint32(nil, n)
		var buf []byte
		_, err := readFrame(bufio.NewReader(bytes.NewReader(append(hdr, 1, 0, 0))), &buf, lim)
		if err == nil || !strings.Contains(err.Error(), "not in") {
			t.Fatalf("length %d: err %v", n, err)
		}
		if cap(buf) != 0 {
			t.Fatalf("length %d: allocated %d bytes before refusing", n, cap(buf))
		}
	}
}

func rawBody(count uint16, parts ...[]byte) []byte {
	b := []byte{kindMessages, byte(count >> 8), byte(count)}
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func rawMsg(g GroupKey, pb []byte) []byte {
	b := append([]byte(nil), g.Topic[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(g.Partition))
	b = binary.BigEndian.AppendUint32(b, uint32(len(pb)))
	return append(b, pb...)
}

func marshal(t testing.TB, m *raftpb.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeFrameRefusesMalformed(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxEntriesPerMsg = 4
	lim.MaxMsgsPerFrame = 3
	hb := marshal(t, msg(raftpb.MsgHeartbeat, 1, 2, 3))
	many := msg(raftpb.MsgApp, 1, 2, 3)
	for i := 0; i < 5; i++ {
		many.Entries = append(many.Entries, &raftpb.Entry{})
	}
	nested := msg(raftpb.MsgAppResp, 1, 2, 3)
	nested.Responses = []*raftpb.Message{msg(raftpb.MsgAppResp, 1, 2, 3)}
	lenOver := rawMsg(group(1), hb)
	binary.BigEndian.PutUint32(lenOver[20:], uint32(lim.MaxMsgBytes+1))
	cases := map[string]struct {
		body []byte
		want string
	}{
		"short":          {[]byte{1, 0}, "shorter than its header"},
		"kind":           {[]byte{9, 0, 0}, "unknown frame kind"},
		"count over":     {rawBody(4), "over the limit of 3"},
		"count past end": {rawBody(2, rawMsg(group(1), hb)), "under a message header"},
		"msg len over":   {rawBody(1, lenOver), "over the limit"},
		"msg len past":   {rawBody(1, rawMsg(group(1), hb)[:msgHeadLen+2]), "bytes left"},
		"trailing":       {rawBody(1, rawMsg(group(1), hb), []byte{0}), "after the frame"},
		"not protobuf":   {rawBody(1, rawMsg(group(1), []byte{0xff, 0xff, 0xff})), "message 0 of 1"},
		"no type":        {rawBody(1, rawMsg(group(1), marshal(t, &raftpb.Message{To: u64(2)}))), "without a type"},
		"local type":     {rawBody(1, rawMsg(group(1), marshal(t, msg(raftpb.MsgHup, 1, 2, 3)))), "raft-local"},
		"unknown type":   {rawBody(1, rawMsg(group(1), marshal(t, msg(raftpb.MessageType(99), 1, 2, 3)))), "unknown raft message type"},
		"negative type":  {rawBody(1, rawMsg(group(1), marshal(t, msg(raftpb.MessageType(-1), 1, 2, 3)))), "unknown raft message type"},
		"many entries":   {rawBody(1, rawMsg(group(1), marshal(t, many))), "more than 4 entries"},
		"responses":      {rawBody(1, rawMsg(group(1), marshal(t, nested))), "nested responses"},
	}
	for name, c := range cases {
		calls := 0
		err := DecodeFrame(c.body, lim, func(GroupKey, *raftpb.Message) error { calls++; return nil })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", name, err, c.want)
		}
		if name != "trailing" && name != "count past end" && calls != 0 {
			t.Errorf("%s: handler called %d times for a refused message", name, calls)
		}
	}
}

// FuzzDecodeFrame: no input makes the decoder panic, hand on a message it
// did not fully check, or accept more than the limits allow.
func FuzzDecodeFrame(f *testing.F) {
	lim := DefaultLimits()
	lim.MaxMsgsPerFrame = 64
	lim.MaxMsgBytes = 16 << 10
	lim.MaxFrameBytes = 64 << 10
	lim.MaxEntriesPerMsg = 32
	app := msg(raftpb.MsgApp, 1, 2, 5)
	app.Entries = []*raftpb.Entry{{Term: u64(5), Index: u64(9), Data: []byte("batch")}}
	snap := msg(raftpb.MsgSnap, 1, 2, 5)
	snap.Snapshot = &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: u64(7), Term: u64(4), ConfState: &raftpb.ConfState{Voters: []uint64{1, 2, 3}}}}
	seed := encodeFrames(f, lim, []GroupKey{group(1), group(2), group(3)},
		[]*raftpb.Message{msg(raftpb.MsgHeartbeat, 1, 2, 5), app, snap})
	f.Add(seed[frameLenBytes:])
	f.Add([]byte{kindMessages, 0, 0})
	f.Add(rawBody(1, rawMsg(group(1), []byte{0x38, 0x01})))
	f.Add(rawBody(1, rawMsg(group(1), marshal(f, msg(raftpb.MessageType(-1), 1, 2, 3)))))
	f.Fuzz(func(t *testing.T, body []byte) {
		n := 0
		_ = DecodeFrame(body, lim, func(g GroupKey, m *raftpb.Message) error {
			n++
			if n > lim.MaxMsgsPerFrame {
				t.Fatalf("%d messages handed on, limit %d", n, lim.MaxMsgsPerFrame)
			}
			if m.Type == nil || len(m.Entries) > lim.MaxEntriesPerMsg || len(m.Responses) != 0 {
				t.Fatalf("unchecked message handed on: %v", m)
			}
			if proto.Size(m) > lim.MaxMsgBytes {
				t.Fatalf("message of %d bytes over the limit", proto.Size(m))
			}
			return nil
		})
	})
}
