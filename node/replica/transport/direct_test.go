package transport

import (
	"bufio"
	"net"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// With the writer idle, Flush writes the queue itself: the message has
// left when Flush returns, with no writer wake-up (FlushInterval is an
// hour, so the writer would not have written it).
func TestFlushWritesOnTheCaller(t *testing.T) {
	c := newCluster(t)
	b := c.start(2, "blue", "", nil)
	a := c.start(1, "blue", "", func(cfg *Config) {
		cfg.FlushInterval = time.Hour
		cfg.IdleTimeout = time.Hour
	})
	a.Send(group(0), heartbeat(1, 2, 0))
	a.Flush() // the connection is not up yet: the writer sends it once it is
	waitCount(t, b.in, 1)
	for i := 1; i <= 20; i++ {
		before := a.Stats()
		a.Send(group(i), heartbeat(1, 2, uint64(i)))
		a.Flush()
		after := a.Stats()
		if after.MsgsSent != before.MsgsSent+1 || after.Writes != before.Writes+1 {
			t.Fatalf("message %d: Flush returned with %d sent in %d writes, want 1 in 1", i,
				after.MsgsSent-before.MsgsSent, after.Writes-before.Writes)
		}
	}
	waitCount(t, b.in, 21)
}

// A peer that stops reading fills the socket's buffers: Flush then gives
// up its own write within its bound and leaves the rest to the writer,
// so a raft worker never waits on one peer; and every frame still arrives
// whole, in order, once the peer reads again.
func TestFlushDoesNotBlockOnAStalledPeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := newCluster(t)
	c.addrs[2] = ln.Addr().String()
	a := c.start(1, "blue", "", func(cfg *Config) {
		cfg.FlushInterval = time.Hour
		cfg.IdleTimeout, cfg.KeepAlive = time.Hour, 20*time.Minute
		cfg.WriteTimeout = time.Minute
	})
	accepted := make(chan net.Conn, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		if _, err := readHello(conn); err == nil {
			conn.Write(welcome{status: statusOK, node: 2, clusterID: "blue"}.encode())
		}
		accepted <- conn
	}()
	// ~40 KiB messages (under directWriteMax), far more than loopback's
	// socket buffers hold, each Flushed at once.
	const n = 400
	sent := 0
	start := time.Now()
	var slowest time.Duration
	for i := range n {
		m := msg(raftpb.MsgApp, 1, 2, 1)
		m.Index = u64(uint64(i))
		m.Entries = []*raftpb.Entry{{Data: make([]byte, 40<<10)}}
		if a.Send(group(0), m) {
			sent++
		}
		t0 := time.Now()
		a.Flush()
		slowest = max(slowest, time.Since(t0))
	}
	if slowest > 500*time.Millisecond {
		t.Fatalf("a Flush to a peer that does not read took %s", slowest)
	}
	t.Logf("%d Flushes in %s, the slowest %s; %d messages queued", n, time.Since(start), slowest, sent)
	conn, ok := <-accepted
	if !ok {
		t.Fatal("no connection")
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	br := bufio.NewReader(conn)
	lim := a.cfg.Limits
	var buf []byte
	next := uint64(0)
	for got := 0; got < sent; {
		body, err := readFrame(br, &buf, lim)
		if err != nil {
			t.Fatalf("after %d of %d messages: %v", got, sent, err)
		}
		if err := DecodeFrame(body, lim, func(g GroupKey, m *raftpb.Message) error {
			if m.GetType() != raftpb.MsgApp {
				return nil // a keepalive carries none
			}
			if m.GetIndex() < next || len(m.Entries) != 1 || len(m.Entries[0].Data) != 40<<10 {
				t.Fatalf("message %d: index %d, want %d or later, whole", got, m.GetIndex(), next)
			}
			next = m.GetIndex() + 1
			got++
			return nil
		}); err != nil {
			t.Fatalf("after %d of %d messages: %v", got, sent, err)
		}
	}
}
