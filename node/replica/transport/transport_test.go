package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// 10,000 groups' heartbeats queued for one peer leave in one write of a
// few frames, and arrive complete, in order, with their group keys.
func TestBatchingManyGroupsFewWrites(t *testing.T) {
	c := newCluster(t)
	b := c.start(2, "blue", "", nil)
	a := c.start(1, "blue", "", func(cfg *Config) {
		cfg.Limits.MaxMsgsPerFrame = 4096
		cfg.IdleTimeout = time.Hour // no keepalive frame inside this test
	})
	release := c.hold(2) // the connection waits until all 10,000 are queued
	const groups = 10000
	for i := 0; i < groups; i++ {
		if !a.Send(group(i), heartbeat(1, 2, uint64(i))) {
			t.Fatalf("heartbeat %d dropped", i)
		}
	}
	release()
	waitCount(t, b.in, groups)
	for i, r := range b.in.snapshot() {
		if r.from != 1 || r.g != group(i) || r.m.GetType() != raftpb.MsgHeartbeat || r.m.GetTerm() != uint64(i) || r.m.GetCommit() != uint64(2*i) {
			t.Fatalf("message %d: from %d group %v %v", i, r.from, r.g, r.m)
		}
	}
	sa, sb := a.Stats(), b.Stats()
	t.Logf("sender %+v", sa)
	t.Logf("receiver %+v", sb)
	if sa.Writes != 1 || sa.FramesSent != 3 || sb.FramesReceived != 3 {
		t.Fatalf("10,000 heartbeats took %d writes, %d frames sent, %d received; want 1 write of 3 frames (4,096 messages a frame)",
			sa.Writes, sa.FramesSent, sb.FramesReceived)
	}
	if sa.MsgsSent != groups || sb.MsgsReceived != groups || sa.BytesSent != sb.BytesReceived {
		t.Fatalf("counters disagree: sent %d msgs %d bytes, received %d msgs %d bytes", sa.MsgsSent, sa.BytesSent, sb.MsgsReceived, sb.BytesReceived)
	}
	if got := a.counter("replication.transport.bytes_sent"); got != float64(sa.BytesSent) {
		t.Fatalf("go-metrics bytes_sent %v, stats %d", got, sa.BytesSent)
	}
	if got := b.counter("replication.transport.bytes_received"); got != float64(sb.BytesReceived) {
		t.Fatalf("go-metrics bytes_received %v, stats %d", got, sb.BytesReceived)
	}

	// A few messages, far from a full frame, go out on the flush tick.
	for i := 0; i < 5; i++ {
		a.Send(group(i), heartbeat(1, 2, 1))
	}
	waitCount(t, b.in, groups+5)
}

// With no flush tick to speak of, the driver's Flush after a round sends
// the round's messages to a peer in one write.
func TestFlushWritesARoundAtOnce(t *testing.T) {
	c := newCluster(t)
	b := c.start(2, "blue", "", nil)
	a := c.start(1, "blue", "", func(cfg *Config) {
		cfg.FlushInterval = time.Hour
		cfg.IdleTimeout = time.Hour
	})
	a.Send(group(0), heartbeat(1, 2, 0))
	a.Flush()
	waitCount(t, b.in, 1)
	before := a.Stats().Writes
	for round := 1; round <= 3; round++ {
		for i := 0; i < 100; i++ {
			a.Send(group(i), heartbeat(1, 2, uint64(round)))
		}
		a.Flush()
		waitCount(t, b.in, 1+100*round)
		if got := a.Stats().Writes - before; got != uint64(round) {
			t.Fatalf("after round %d of 100 messages and a Flush each: %d writes", round, got)
		}
	}
	a.Close()
	if a.Send(group(1), heartbeat(1, 2, 9)) {
		t.Fatal("Send after Close accepted a message")
	}
}

// Send never blocks: with the peer not yet connected, the queue fills to
// its bound and the rest are dropped and counted; what was queued arrives.
func TestSendQueueBoundDropsAndCounts(t *testing.T) {
	c := newCluster(t)
	b := c.start(2, "blue", "", nil)
	a := c.start(1, "blue", "", func(cfg *Config) { cfg.QueueMsgs = 1000 })
	release := c.hold(2)
	accepted := 0
	for i := 0; i < 1500; i++ {
		if a.Send(group(i), heartbeat(1, 2, uint64(i))) {
			accepted++
		}
	}
	if accepted != 1000 || a.Stats().DroppedQueueFull != 500 {
		t.Fatalf("accepted %d, dropped %d; want 1000 and 500", accepted, a.Stats().DroppedQueueFull)
	}
	if got := a.counter("replication.transport.dropped"); got != 500 {
		t.Fatalf("go-metrics dropped %v, want 500", got)
	}
	release()
	waitCount(t, b.in, 1000)

	// The byte bound, with messages of ~1 KiB.
	d := c.start(3, "blue", "", nil)
	e := c.start(4, "blue", "", func(cfg *Config) {
		cfg.QueueBytes = 64 << 10
		cfg.Limits = Limits{MaxFrameBytes: 64 << 10, MaxMsgsPerFrame: 1000, MaxMsgBytes: 8 << 10, MaxEntriesPerMsg: 100}
	})
	release = c.hold(3)
	accepted = 0
	for i := 0; i < 200; i++ {
		m := msg(raftpb.MsgApp, 4, 3, 1)
		m.Entries = []*raftpb.Entry{{Data: make([]byte, 1000)}}
		if e.Send(group(i), m) {
			accepted++
		}
	}
	if accepted < 60 || accepted > 70 || e.Stats().DroppedQueueFull != uint64(200-accepted) {
		t.Fatalf("64 KiB queue took %d messages of ~1 KiB, dropped %d", accepted, e.Stats().DroppedQueueFull)
	}
	release()
	waitCount(t, d.in, accepted)
}

// A message over the per-message bound, or not addressed from this node,
// is refused at Send and counted; a snapshot's metadata travels.
func TestSendRefusesOversizedAndMisaddressed(t *testing.T) {
	c := newCluster(t)
	b := c.start(2, "blue", "", nil)
	a := c.start(1, "blue", "", func(cfg *Config) {
		cfg.Limits = Limits{MaxFrameBytes: 256 << 10, MaxMsgsPerFrame: 100, MaxMsgBytes: 64 << 10, MaxEntriesPerMsg: 100}
	})
	big := msg(raftpb.MsgApp, 1, 2, 1)
	big.Entries = []*raftpb.Entry{{Data: make([]byte, 65<<10)}}
	bigSnap := msg(raftpb.MsgSnap, 1, 2, 1)
	bigSnap.Snapshot = &raftpb.Snapshot{Data: make([]byte, 65<<10), Metadata: &raftpb.SnapshotMetadata{Index: u64(5), Term: u64(1)}}
	for name, m := range map[string]*raftpb.Message{
		"oversized":     big,
		"snapshot data": bigSnap,
		"from another":  heartbeat(3, 2, 1),
		"to itself":     heartbeat(1, 1, 1),
		"to none":       heartbeat(1, 0, 1),
	} {
		if a.Send(group(1), m) {
			t.Errorf("%s: accepted", name)
		}
	}
	if got := a.Stats().DroppedInvalid; got != 5 {
		t.Fatalf("DroppedInvalid %d, want 5", got)
	}
	snap := msg(raftpb.MsgSnap, 1, 2, 1)
	snap.Snapshot = &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: u64(5), Term: u64(1), ConfState: &raftpb.ConfState{Voters: []uint64{1, 2, 3}}}}
	if !a.Send(group(1), snap) {
		t.Fatal("snapshot metadata dropped")
	}
	waitCount(t, b.in, 1)
	if got := b.in.snapshot()[0].m; !proto.Equal(got, snap) {
		t.Fatalf("received %v, sent %v", got, snap)
	}
	eventually(t, 10*time.Second, "snapshot reported sent", func() error {
		a.rep.mu.Lock()
		defer a.rep.mu.Unlock()
		if a.rep.snapOK != 1 {
			return fmt.Errorf("%d ok", a.rep.snapOK)
		}
		return nil
	})
}

// rawPeer dials n as a hand-made peer and handshakes; status is the answer.
func rawPeer(t *testing.T, n *node, h hello) (net.Conn, welcome) {
	t.Helper()
	conn, err := net.Dial("tcp", n.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(h.encode()); err != nil {
		t.Fatal(err)
	}
	w, err := readWelcome(conn)
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return conn, w
}

// waitClosed reads until the other side closes; a read timeout means it did not.
func waitClosed(t *testing.T, conn net.Conn, what string) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: connection still open after 10s", what)
	}
}

func frameOf(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// A peer is never trusted: each malformed or misaddressed frame closes its
// connection, hands nothing on, and leaves the node serving others.
func TestMalformedFramesCloseConnection(t *testing.T) {
	c := newCluster(t)
	lim := Limits{MaxFrameBytes: 64 << 10, MaxMsgsPerFrame: 16, MaxMsgBytes: 16 << 10, MaxEntriesPerMsg: 8}
	b := c.start(2, "blue", "", func(cfg *Config) { cfg.Limits = lim })
	hb := marshal(t, heartbeat(1, 2, 1))
	huge := rawMsg(group(1), hb)
	binary.BigEndian.PutUint32(huge[20:], 1<<31)
	cases := map[string][]byte{
		"frame over the bound":   binary.BigEndian.AppendUint32(nil, uint32(lim.MaxFrameBytes+1)),
		"frame of 4 GiB":         binary.BigEndian.AppendUint32(nil, 1<<32-1),
		"frame under its header": frameOf([]byte{1}),
		"message over the bound": frameOf(rawBody(1, huge)),
		"too many messages":      frameOf(rawBody(17)),
		"not protobuf":           frameOf(rawBody(1, rawMsg(group(1), []byte{0xff, 0xff}))),
		"spoofed sender":         frameOf(rawBody(1, rawMsg(group(1), marshal(t, heartbeat(3, 2, 1))))),
		"to another node":        frameOf(rawBody(1, rawMsg(group(1), marshal(t, heartbeat(1, 5, 1))))),
		"raft-local type":        frameOf(rawBody(1, rawMsg(group(1), marshal(t, msg(raftpb.MsgHup, 1, 2, 1))))),
	}
	refused := b.Stats().Refused
	for name, bytes := range cases {
		conn, w := rawPeer(t, b, hello{from: 1, to: 2, clusterID: "blue"})
		if w.status != statusOK {
			t.Fatalf("%s: handshake status %s", name, statusText(w.status))
		}
		if _, err := conn.Write(bytes); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		waitClosed(t, conn, name)
		refused++
		eventually(t, 10*time.Second, name+": counted as refused", func() error {
			if got := b.Stats().Refused; got != refused {
				return fmt.Errorf("refused %d, want %d", got, refused)
			}
			return nil
		})
	}
	// Not a peer at all.
	conn, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	waitClosed(t, conn, "http request")
	if n := b.in.count(); n != 0 {
		t.Fatalf("%d messages handed on from malformed frames", n)
	}
	// The node still serves a well-behaved peer.
	a := c.start(1, "blue", "", func(cfg *Config) { cfg.Limits = lim })
	a.Send(group(1), heartbeat(1, 2, 1))
	waitCount(t, b.in, 1)
}

// A peer that handshakes and then stays silent, or never handshakes, is
// closed at its deadline.
func TestReadDeadlines(t *testing.T) {
	c := newCluster(t)
	b := c.start(2, "blue", "", func(cfg *Config) {
		cfg.IdleTimeout = 300 * time.Millisecond
		cfg.KeepAlive = 100 * time.Millisecond
		cfg.HandshakeTimeout = 300 * time.Millisecond
	})
	conn, w := rawPeer(t, b, hello{from: 1, to: 2, clusterID: "blue"})
	if w.status != statusOK {
		t.Fatalf("status %s", statusText(w.status))
	}
	waitClosed(t, conn, "silent after handshake")
	conn2, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	waitClosed(t, conn2, "no handshake")

	// A real sender keeps an idle connection alive with empty frames, for
	// longer than the receiver's idle deadline, on one connection.
	d := c.start(3, "blue", "", func(cfg *Config) { cfg.IdleTimeout = 2 * time.Second })
	a := c.start(1, "blue", "", func(cfg *Config) {
		cfg.IdleTimeout = 2 * time.Second
		cfg.KeepAlive = 50 * time.Millisecond
	})
	a.Send(group(1), heartbeat(1, 3, 1))
	waitCount(t, d.in, 1)
	start := time.Now()
	eventually(t, 20*time.Second, "keepalives past the idle deadline", func() error {
		if got := a.Stats().Writes; got < 40 || time.Since(start) < 2*time.Second {
			return fmt.Errorf("%d writes", got)
		}
		return nil
	})
	a.Send(group(1), heartbeat(1, 3, 2))
	waitCount(t, d.in, 2)
	if got := a.Stats().Reconnects; got != 0 {
		t.Fatalf("idle connection was re-established %d times despite keepalives", got)
	}
}

// A peer from another cluster, or a listener that is not the node dialled,
// is refused; the sender reports its groups unreachable.
func TestHandshakeRefusesOtherClusterAndWrongNode(t *testing.T) {
	c := newCluster(t)
	b := c.start(2, "blue", "", nil)
	a := c.start(1, "green", "", nil)
	eventually(t, 10*time.Second, "other cluster refused and reported", func() error {
		a.Send(group(7), heartbeat(1, 2, 1))
		if a.rep.unreachableFor(group(7)) == 0 || b.Stats().Refused == 0 {
			return fmt.Errorf("unreachable %d, refused %d", a.rep.unreachableFor(group(7)), b.Stats().Refused)
		}
		return nil
	})
	if got := b.counter("replication.transport.refused"); got == 0 {
		t.Fatal("no refused metric")
	}
	_, w := rawPeer(t, b, hello{from: 1, to: 2, clusterID: "green"})
	if w.status != statusWrongCluster || w.clusterID != "blue" {
		t.Fatalf("answer %+v, want another-cluster", w)
	}

	// Node 4's address points at node 2.
	c.mu.Lock()
	c.addrs[4] = b.Addr().String()
	c.mu.Unlock()
	d := c.start(3, "blue", "", nil)
	eventually(t, 10*time.Second, "wrong node refused and reported", func() error {
		d.Send(group(8), heartbeat(3, 4, 1))
		if d.rep.unreachableFor(group(8)) == 0 {
			return errors.New("not reported")
		}
		return nil
	})
	if n := b.in.count(); n != 0 {
		t.Fatalf("%d messages delivered across a refused handshake", n)
	}
}

// The peer dies: messages to it are dropped, counted and reported; it comes
// back on the same port: messages flow again on a new connection.
func TestReconnectAfterPeerRestart(t *testing.T) {
	c := newCluster(t)
	b := c.start(2, "blue", "", nil)
	addr := b.Addr().String()
	a := c.start(1, "blue", "", nil)
	g := group(3)
	a.Send(g, heartbeat(1, 2, 1))
	waitCount(t, b.in, 1)

	b.Close()
	eventually(t, 10*time.Second, "dead peer reported unreachable", func() error {
		a.Send(g, heartbeat(1, 2, 2))
		if a.rep.unreachableFor(g) == 0 || a.Stats().DroppedUnreachable == 0 {
			return fmt.Errorf("unreachable %d, dropped %d", a.rep.unreachableFor(g), a.Stats().DroppedUnreachable)
		}
		return nil
	})
	if got := a.counter("replication.transport.dropped"); got == 0 {
		t.Fatal("no dropped metric")
	}

	b2 := c.start(2, "blue", addr, nil)
	eventually(t, 20*time.Second, "messages flow to the restarted peer", func() error {
		a.Send(g, heartbeat(1, 2, 3))
		if b2.in.count() == 0 {
			return errors.New("nothing received")
		}
		return nil
	})
	if a.Stats().Reconnects == 0 || a.counter("replication.transport.reconnects") == 0 {
		t.Fatalf("reconnects %d", a.Stats().Reconnects)
	}
}

// Three nodes, two connections per peer, many goroutines sending at once:
// every message arrives, each group's in order (run with -race).
func TestConcurrentSendersMesh(t *testing.T) {
	c := newCluster(t)
	two := func(cfg *Config) { cfg.ConnsPerPeer = 2 }
	nodes := []*node{c.start(1, "blue", "", two), c.start(2, "blue", "", two), c.start(3, "blue", "", two)}
	const senders, groupsPer, perGroup = 4, 25, 20
	var wg sync.WaitGroup
	for _, n := range nodes {
		for s := 0; s < senders; s++ {
			wg.Add(1)
			go func(n *node, s int) {
				defer wg.Done()
				from := n.cfg.NodeID
				for k := 0; k < perGroup; k++ {
					for gi := 0; gi < groupsPer; gi++ {
						for to := uint64(1); to <= 3; to++ {
							if to == from {
								continue
							}
							m := msg(raftpb.MsgApp, from, to, 1)
							m.Index = u64(uint64(k))
							if !n.Send(group(s*groupsPer+gi), m) {
								t.Errorf("node %d: send dropped", from)
							}
						}
					}
					runtime.Gosched()
				}
			}(n, s)
		}
	}
	wg.Wait()
	want := 2 * senders * groupsPer * perGroup
	for _, n := range nodes {
		waitCount(t, n.in, want)
		next := map[[2]uint64]map[GroupKey]uint64{}
		for _, r := range n.in.snapshot() {
			k := [2]uint64{r.from, 0}
			if next[k] == nil {
				next[k] = map[GroupKey]uint64{}
			}
			if got := r.m.GetIndex(); got != next[k][r.g] {
				t.Fatalf("node %d: group %v from %d: index %d, want %d", n.cfg.NodeID, r.g, r.from, got, next[k][r.g])
			}
			next[k][r.g]++
		}
	}
}

// BenchmarkSendSmall measures heartbeat-sized messages per second from one
// node to another over loopback, across 1,000 groups.
func BenchmarkSendSmall(b *testing.B) {
	c := newCluster(b)
	quiet := func(cfg *Config) { cfg.Log.Logger.SetLevel(0) }
	dst := c.start(2, "blue", "", quiet)
	src := c.start(1, "blue", "", quiet)
	msgs := make([]*raftpb.Message, 1000)
	for i := range msgs {
		msgs[i] = heartbeat(1, 2, uint64(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		for !src.Send(group(i%1000), msgs[i%1000]) {
			runtime.Gosched() // queue full: let the writer drain
		}
	}
	for dst.in.count() < b.N {
		time.Sleep(100 * time.Microsecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	s := src.Stats()
	b.ReportMetric(float64(s.MsgsSent)/float64(max(s.Writes, 1)), "msgs/write")
}

// A peer whose process dies is reported lost at once, by its connection
// closing, so the groups it led wake without waiting for gossip.
func TestPeerLostWhenItsConnectionEnds(t *testing.T) {
	c := newCluster(t)
	lost := make(chan uint64, 4)
	b := c.start(2, "blue", "", func(cfg *Config) { cfg.PeerLost = func(n uint64) { lost <- n } })
	a := c.start(1, "blue", "", nil)
	a.Send(group(3), heartbeat(1, 2, 1))
	waitCount(t, b.in, 1)
	select {
	case n := <-lost:
		t.Fatalf("peer %d reported lost while connected", n)
	default:
	}
	a.Close()
	select {
	case n := <-lost:
		if n != 1 {
			t.Fatalf("lost peer %d, want 1", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("peer 1 closed its connection and was not reported lost")
	}
}
