package transport

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-metrics"
	"github.com/sirupsen/logrus"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/spool-log/spool/internal/stages"
)

var errClosed = errors.New("transport closed")

// batch is a send queue's content: encoded frames and, per message, what
// the raft driver must hear about if the frames are lost.
type batch struct {
	fb     frameBuf
	groups []GroupKey // one per message, for Unreachable
	snaps  []GroupKey // one per MsgSnap, for SnapshotStatus
	bytes  int
	msgs   int
	first  time.Time // when stages.On: its first message was queued
}

func (b *batch) reset() {
	if cap(b.fb.b) > 4<<20 { // one burst must not pin its buffer for good
		b.fb.b = nil
	}
	if cap(b.groups) > 1<<16 {
		b.groups = nil
	}
	b.fb.reset()
	b.groups = b.groups[:0]
	b.snaps = b.snaps[:0]
	b.bytes, b.msgs = 0, 0
	b.first = time.Time{}
}

func newBatch() *batch {
	b := &batch{}
	b.reset()
	return b
}

// link is one long-lived connection to a peer with its bounded send queue
// and the one goroutine (run) that dials, writes and redials.
type link struct {
	t    *Transport
	to   uint64
	log  *logrus.Entry
	kick chan struct{} // cap 1: the queue became non-empty or full, or Flush
	// flushNow is set by Flush: write what is queued without waiting out
	// the FlushInterval window.
	flushNow atomic.Bool

	mu   sync.Mutex
	cur  *batch   // being filled by Send
	free *batch   // the writer's spare, swapped in by take
	conn net.Conn // current connection, closed by Transport.Close
}

func newLink(t *Transport, to uint64) *link {
	return &link{
		t:    t,
		to:   to,
		log:  t.log.WithField("peer", to),
		kick: make(chan struct{}, 1),
		cur:  newBatch(),
		free: newBatch(),
	}
}

func (l *link) signal() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// enqueue encodes m into the queue; it never blocks beyond the queue's
// mutex. The byte bound may be passed by the one message that crosses it.
func (l *link) enqueue(g GroupKey, m *raftpb.Message) bool {
	cfg := &l.t.cfg
	l.mu.Lock()
	b := l.cur
	if b.msgs >= cfg.QueueMsgs || b.bytes >= cfg.QueueBytes {
		l.mu.Unlock()
		l.t.c.droppedQueueFull.Add(1)
		cfg.Metrics.IncrCounterWithLabels([]string{"replication", "transport", "dropped"}, 1,
			[]metrics.Label{{Name: "reason", Value: "queue_full"}})
		return false
	}
	n, err := b.fb.appendMsg(g, m, cfg.Limits)
	if err != nil {
		l.mu.Unlock()
		l.t.dropInvalid(g, m, err.Error())
		return false
	}
	b.bytes += n
	b.msgs++
	if stages.On && b.msgs == 1 {
		b.first = time.Now()
	}
	b.groups = append(b.groups, g)
	if m.GetType() == raftpb.MsgSnap {
		b.snaps = append(b.snaps, g)
	}
	wake := b.msgs == 1 || b.bytes >= cfg.FlushBytes
	l.mu.Unlock()
	if wake {
		l.signal()
	}
	return true
}

// due says whether the queue should be written now rather than at the end
// of the FlushInterval window.
func (l *link) due() bool {
	if l.flushNow.Load() {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur.bytes >= l.t.cfg.FlushBytes
}

// flush asks the writer to write what is queued now.
func (l *link) flush() {
	l.mu.Lock()
	queued := l.cur.msgs > 0
	l.mu.Unlock()
	if queued {
		l.flushNow.Store(true)
		l.signal()
	}
}

// take swaps the queue out for writing; nil when it is empty.
func (l *link) take() *batch {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.cur
	if b.msgs == 0 {
		return nil
	}
	b.fb.finish()
	if l.free != nil {
		l.cur, l.free = l.free, nil
	} else {
		l.cur = newBatch()
	}
	return b
}

func (l *link) release(b *batch) {
	b.reset()
	l.mu.Lock()
	if l.free == nil {
		l.free = b
	}
	l.mu.Unlock()
}

// drop discards a batch that cannot be delivered and tells the raft driver,
// once per group, outside every lock (the driver may Send from the callback).
func (l *link) drop(b *batch) {
	cfg := &l.t.cfg
	l.t.c.droppedUnreachable.Add(uint64(b.msgs))
	cfg.Metrics.IncrCounterWithLabels([]string{"replication", "transport", "dropped"}, float32(b.msgs),
		[]metrics.Label{{Name: "reason", Value: "unreachable"}})
	if cfg.Unreachable != nil {
		seen := make(map[GroupKey]struct{}, 16)
		for _, g := range b.groups {
			if _, ok := seen[g]; !ok {
				seen[g] = struct{}{}
				cfg.Unreachable(g, l.to)
			}
		}
	}
	if cfg.SnapshotStatus != nil {
		for _, g := range b.snaps {
			cfg.SnapshotStatus(g, l.to, false)
		}
	}
	l.release(b)
}

func (l *link) dropQueued() {
	if b := l.take(); b != nil {
		l.drop(b)
	}
}

func (l *link) stopped() bool {
	select {
	case <-l.t.stop:
		return true
	default:
		return false
	}
}

// run dials, writes until the connection breaks, and redials with
// exponential backoff and jitter, until the transport closes.
func (l *link) run() {
	defer l.t.wg.Done()
	cfg := &l.t.cfg
	backoff := cfg.BackoffMin
	everUp, failing := false, false
	for !l.stopped() {
		conn, err := l.dial()
		if err != nil {
			if l.stopped() {
				return
			}
			entry := l.log.WithError(err)
			if !failing {
				entry.Warn("raft peer unreachable; retrying with backoff")
			} else {
				entry.Debug("raft peer still unreachable")
			}
			failing = true
			if !l.waitBackoff(backoff) {
				return
			}
			backoff = min(2*backoff, cfg.BackoffMax)
			continue
		}
		if everUp {
			l.t.c.reconnects.Add(1)
			cfg.Metrics.IncrCounter([]string{"replication", "transport", "reconnects"}, 1)
		}
		if failing {
			l.log.Info("raft peer reachable again")
		}
		everUp, failing = true, false
		start := time.Now()
		err = l.serve(conn)
		l.mu.Lock()
		l.conn = nil
		l.mu.Unlock()
		conn.Close()
		if l.stopped() {
			return
		}
		l.log.WithError(err).Warn("raft connection lost; reconnecting")
		if time.Since(start) >= cfg.BackoffMax {
			backoff = cfg.BackoffMin
			continue
		}
		// A connection that breaks soon after it was made is not retried
		// at once, or a peer that accepts and drops would spin us.
		if !l.waitBackoff(backoff) {
			return
		}
		backoff = min(2*backoff, cfg.BackoffMax)
	}
}

// waitBackoff waits d (jittered to d/2..d), dropping and reporting whatever
// is queued meanwhile: the peer is unreachable, and raft must hear so now.
// False when the transport closed.
func (l *link) waitBackoff(d time.Duration) bool {
	d = d/2 + rand.N(d/2+1)
	timer := time.NewTimer(d)
	defer timer.Stop()
	l.dropQueued()
	for {
		select {
		case <-timer.C:
			return true
		case <-l.kick:
			l.dropQueued()
		case <-l.t.stop:
			return false
		}
	}
}

// dial connects and handshakes.
func (l *link) dial() (net.Conn, error) {
	cfg := &l.t.cfg
	addr, ok := cfg.Resolve(l.to)
	if !ok {
		return nil, fmt.Errorf("no raft address known for node %d", l.to)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.DialTimeout)
	defer cancel()
	go func() { // Close must not wait out a dial
		select {
		case <-l.t.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial node %d at %s: %w", l.to, addr, err)
	}
	l.mu.Lock()
	if l.stopped() {
		l.mu.Unlock()
		conn.Close()
		return nil, errClosed
	}
	l.conn = conn
	l.mu.Unlock()
	if l.t.cfg.TLS != nil {
		raw := conn
		if conn, err = l.clientTLS(raw, addr); err != nil {
			l.mu.Lock()
			l.conn = nil
			l.mu.Unlock()
			raw.Close()
			return nil, err
		}
	}
	if err := l.handshake(conn, addr); err != nil {
		l.mu.Lock()
		l.conn = nil
		l.mu.Unlock()
		conn.Close()
		return nil, err
	}
	return conn, nil
}

func (l *link) handshake(conn net.Conn, addr string) error {
	cfg := &l.t.cfg
	d := Dialler{From: cfg.NodeID, To: l.to, ClusterID: l.t.clusterID(), SameCluster: l.t.sameCluster}
	if d.ClusterID == "" {
		return fmt.Errorf("handshake with node %d at %s: this node knows no cluster id yet", l.to, addr)
	}
	if cfg.Auth != nil {
		if d.Keys = cfg.Auth.Keys(); len(d.Keys) == 0 {
			return fmt.Errorf("handshake with node %d at %s: this node has no gossip key yet", l.to, addr)
		}
	}
	err := d.Handshake(conn, cfg.HandshakeTimeout)
	if errors.Is(err, errPeerUnauthenticated) {
		cfg.Metrics.IncrCounterWithLabels([]string{"replication", "transport", "dial_refused"}, 1,
			[]metrics.Label{{Name: "reason", Value: "bad_key"}})
	}
	return err
}

func (l *link) closeConn() {
	l.mu.Lock()
	if l.conn != nil {
		l.conn.Close()
	}
	l.mu.Unlock()
}

// serve writes queued frames to conn until it breaks or the transport
// closes. The peer never writes after the handshake, so a read returning
// at all means the peer is gone (or misbehaving): that is how a dead peer
// is noticed without waiting for a write to fail.
func (l *link) serve(conn net.Conn) error {
	cfg := &l.t.cfg
	dead := make(chan error, 1)
	l.t.wg.Add(1)
	go func() {
		defer l.t.wg.Done()
		var b [1]byte
		_, err := conn.Read(b[:])
		if err == nil {
			err = errors.New("peer wrote after the handshake")
		}
		dead <- err
	}()
	keep := time.NewTicker(cfg.KeepAlive)
	defer keep.Stop()
	window := time.NewTimer(time.Hour)
	window.Stop()
	defer window.Stop()
	lastWrite := time.Now()
	for {
		select {
		case <-l.kick:
		case <-keep.C:
			if time.Since(lastWrite) < cfg.KeepAlive/2 {
				continue
			}
			if err := l.write(conn, keepAliveFrame); err != nil {
				return fmt.Errorf("keepalive: %w", err)
			}
			lastWrite = time.Now()
			continue
		case err := <-dead:
			return fmt.Errorf("peer closed the connection: %w", err)
		case <-l.t.stop:
			return errClosed
		}
		if cfg.FlushInterval > 0 && !l.due() {
			window.Reset(cfg.FlushInterval)
		wait:
			for {
				select {
				case <-window.C:
					break wait
				case <-l.kick:
					if l.due() {
						window.Stop()
						break wait
					}
				case err := <-dead:
					return fmt.Errorf("peer closed the connection: %w", err)
				case <-l.t.stop:
					return errClosed
				}
			}
		}
		l.flushNow.Store(false)
		b := l.take()
		if b == nil {
			continue
		}
		if err := l.write(conn, b.fb.b); err != nil {
			l.drop(b)
			return err
		}
		stages.Since("T transport: queued to written", b.first)
		l.t.c.msgsSent.Add(uint64(b.msgs))
		l.t.c.framesSent.Add(uint64(b.fb.frames))
		cfg.Metrics.IncrCounter([]string{"replication", "transport", "msgs_sent"}, float32(b.msgs))
		if cfg.SnapshotStatus != nil {
			for _, g := range b.snaps {
				cfg.SnapshotStatus(g, l.to, true)
			}
		}
		l.release(b)
		lastWrite = time.Now()
	}
}

var keepAliveFrame = []byte{0, 0, 0, frameHeadLen, kindMessages, 0, 0}

func (l *link) write(conn net.Conn, p []byte) error {
	cfg := &l.t.cfg
	conn.SetWriteDeadline(time.Now().Add(cfg.WriteTimeout))
	n, err := conn.Write(p)
	l.t.c.writes.Add(1)
	l.t.c.bytesSent.Add(uint64(n))
	cfg.Metrics.IncrCounter([]string{"replication", "transport", "bytes_sent"}, float32(n))
	if err != nil {
		return fmt.Errorf("write %d bytes to node %d: %w", len(p), l.to, err)
	}
	return nil
}
