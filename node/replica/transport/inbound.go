package transport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hashicorp/go-metrics"
	"go.etcd.io/raft/v3/raftpb"
)

func (t *Transport) acceptLoop() {
	defer t.wg.Done()
	for {
		c, err := t.ln.Accept()
		if err != nil {
			select {
			case <-t.stop:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			t.log.WithError(err).Warn("raft transport accept")
			select { // e.g. out of file descriptors: do not spin
			case <-time.After(50 * time.Millisecond):
			case <-t.stop:
				return
			}
			continue
		}
		select {
		case t.sem <- struct{}{}:
		default:
			t.refuse("too_many_conns")
			t.refusals.warn(t.log.WithField("remote", c.RemoteAddr().String()), "too_many_conns",
				fmt.Errorf("already %d inbound connections", t.cfg.MaxInboundConns))
			c.Close()
			continue
		}
		host := remoteHost(c)
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			c.Close()
			<-t.sem
			return
		}
		if t.pending[host] >= t.cfg.MaxPendingPerHost {
			t.mu.Unlock()
			t.refuse("too_many_pending")
			t.refusals.warn(t.log.WithField("remote", c.RemoteAddr().String()), "too_many_pending",
				fmt.Errorf("already %d handshakes under way from %s", t.cfg.MaxPendingPerHost, host))
			c.Close()
			<-t.sem
			continue
		}
		t.pending[host]++
		t.inbound[c] = struct{}{}
		t.mu.Unlock()
		t.wg.Add(1)
		go t.serveInbound(c, host)
	}
}

func (t *Transport) refuse(reason string) {
	t.c.refused.Add(1)
	t.cfg.Metrics.IncrCounterWithLabels([]string{"replication", "transport", "refused"}, 1,
		[]metrics.Label{{Name: "reason", Value: reason}})
}

// serveInbound handshakes a peer and then reads its frames until it goes,
// misbehaves or goes quiet past IdleTimeout. Every fault closes the
// connection with a logged reason.
func (t *Transport) serveInbound(c net.Conn, host string) {
	handshaking := true
	done := func() { // the handshake is over, one way or the other
		if handshaking {
			handshaking = false
			t.mu.Lock()
			if t.pending[host]--; t.pending[host] <= 0 {
				delete(t.pending, host)
			}
			t.mu.Unlock()
		}
	}
	defer func() {
		done()
		c.Close()
		t.mu.Lock()
		delete(t.inbound, c)
		t.mu.Unlock()
		<-t.sem
		t.wg.Done()
	}()
	log := t.log.WithField("remote", c.RemoteAddr().String())
	conn := c // the deferred cleanup above keeps the raw connection
	if t.cfg.TLS != nil {
		tc, err := t.serverTLS(c)
		if err != nil {
			t.refuse("tls")
			select {
			case <-t.stop:
			default:
				t.refusals.warn(log, "tls", err)
			}
			return
		}
		conn = tc
	}
	peer, reason, err := t.accept(conn)
	done()
	if err != nil {
		select {
		case <-t.stop:
		default:
			t.refusals.warn(log, reason, err)
		}
		return
	}
	log = log.WithField("peer", peer)
	log.Debug("raft peer connected")
	err = t.readFrames(conn, peer)
	select {
	case <-t.stop:
		return
	default:
	}
	if t.cfg.PeerLost != nil {
		t.cfg.PeerLost(peer)
	}
	switch {
	case errors.Is(err, io.EOF):
		log.Info("raft peer closed its connection")
	case isTimeout(err):
		log.WithError(err).Warn("raft connection idle past its read deadline; closing")
	default:
		t.refuse("protocol")
		log.WithError(err).Warn("raft connection closed: malformed or unexpected frame")
	}
}

// remoteHost is the IP a connection comes from, what MaxPendingPerHost counts by.
func remoteHost(c net.Conn) string {
	a := c.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(a); err == nil {
		return h
	}
	return a
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

var errSpoofed = errors.New("message not addressed from the handshaken peer to this node")

func (t *Transport) readFrames(c net.Conn, peer uint64) error {
	lim := t.cfg.Limits
	br := bufio.NewReaderSize(c, 64<<10)
	var buf []byte
	for {
		c.SetReadDeadline(time.Now().Add(t.cfg.IdleTimeout))
		body, err := readFrame(br, &buf, lim)
		if err != nil {
			return err
		}
		t.c.framesReceived.Add(1)
		t.c.bytesReceived.Add(uint64(frameLenBytes + len(body)))
		t.cfg.Metrics.IncrCounter([]string{"replication", "transport", "bytes_received"}, float32(frameLenBytes+len(body)))
		n := 0
		err = DecodeFrame(body, lim, func(g GroupKey, m *raftpb.Message) error {
			if m.GetFrom() != peer || m.GetTo() != t.cfg.NodeID {
				return fmt.Errorf("group %s: %s from %d to %d: %w", g, m.GetType(), m.GetFrom(), m.GetTo(), errSpoofed)
			}
			n++
			t.cfg.Handler(peer, g, m)
			return nil
		})
		t.c.msgsReceived.Add(uint64(n))
		if n > 0 {
			t.cfg.Metrics.IncrCounter([]string{"replication", "transport", "msgs_received"}, float32(n))
		}
		if err != nil {
			return err
		}
		if cap(buf) > 1<<20 && len(body) < 64<<10 {
			buf = nil // one big frame must not pin its buffer for good
		}
	}
}
