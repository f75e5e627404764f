package transport

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-metrics"
	"github.com/sirupsen/logrus"
	"go.etcd.io/raft/v3/raftpb"
)

// Handler receives each message from a peer, on that connection's reader
// goroutine: it must hand the message to the group's driver and return,
// not block on the group. from is the handshaken sender (== m.From).
type Handler func(from uint64, group GroupKey, m *raftpb.Message)

// Config of a Transport. Zero durations and sizes take the defaults.
type Config struct {
	NodeID    uint64 // this node's id on the wire, == raft's replica id; not 0
	ClusterID string // refused unless both ends agree; 1..64 bytes
	// CurrentClusterID, when set, is asked for the cluster id at every
	// handshake instead of ClusterID: the node's membership settles on
	// its cluster's id after the transport is listening, and may adopt
	// an older one while a new cluster forms. An empty answer refuses
	// handshakes (both ways) until there is one.
	CurrentClusterID func() string
	// PeerClusterID, when set, is the cluster id node advertises in this
	// node's gossip view ("" if unknown). While a new cluster settles on
	// one id, a member of this node's gossip cluster may still advertise
	// its own: its handshakes are of this cluster, bound to the id it
	// claims (sameCluster), rather than refused until gossip converges.
	PeerClusterID func(node uint64) string
	ListenAddr    string // host:port to listen on ("127.0.0.1:0" picks a port)

	// Auth, when set, makes every handshake prove both ends hold a key
	// of the cluster's gossip keyring (auth.go); peers without it are
	// refused, and so are peers with it by a node without it.
	Auth *AuthConfig

	// Resolve gives a peer's listen address, from the gossip view.
	Resolve func(node uint64) (addr string, ok bool)
	Handler Handler
	// Unreachable is told, per group, that messages to node were dropped
	// because it could not be reached (raft's ReportUnreachable).
	Unreachable func(group GroupKey, node uint64)
	// SnapshotStatus is told whether a MsgSnap to node was written to its
	// connection (ok) or dropped (raft's ReportSnapshot).
	SnapshotStatus func(group GroupKey, node uint64, ok bool)
	// PeerLost, if set, is told that a peer's connection to this node
	// ended (it closed, reset or went quiet past IdleTimeout): a process
	// that died is seen here at once, well before gossip declares it
	// failed. Called from the transport's own goroutines; must not block.
	PeerLost func(node uint64)

	// TLS, when set, makes every connection mutual TLS (tls.go); nil
	// keeps them plain TCP.
	TLS *TLSConfig

	Limits       Limits // zero fields take DefaultLimits'
	ConnsPerPeer int    // 1 or 2 long-lived connections per peer; default 1

	QueueBytes int // per-peer send queue bound in bytes; default 16 MiB
	QueueMsgs  int // per-peer send queue bound in messages; default 65536
	// FlushInterval is how long a writer waits for more messages once one is
	// queued, unless FlushBytes are waiting or Flush is called; default 1ms,
	// <0 = write at once. A driver that calls Flush after each round of
	// Readys gets one write per peer per round and no added latency.
	FlushInterval time.Duration
	FlushBytes    int // write without waiting once this much is queued; default 256 KiB

	DialTimeout      time.Duration // default 2s
	HandshakeTimeout time.Duration // default 5s
	WriteTimeout     time.Duration // default 10s
	IdleTimeout      time.Duration // read deadline between frames; default 30s
	KeepAlive        time.Duration // empty frame after this long idle; default IdleTimeout/3
	BackoffMin       time.Duration // first redial delay; default 50ms
	BackoffMax       time.Duration // default 2s
	MaxInboundConns  int           // default 1024
	// MaxPendingPerHost bounds the accepted connections from one remote
	// IP that have not finished their handshake, so a stranger opening
	// connections and sending nothing holds at most this many of the
	// MaxInboundConns for at most HandshakeTimeout each; default 16.
	MaxPendingPerHost int

	Metrics *metrics.Metrics // default: go-metrics' global
	Log     *logrus.Entry
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d == 0 {
			*d = v
		}
	}
	dl := DefaultLimits()
	defInt(&c.Limits.MaxFrameBytes, dl.MaxFrameBytes)
	defInt(&c.Limits.MaxMsgsPerFrame, dl.MaxMsgsPerFrame)
	defInt(&c.Limits.MaxMsgBytes, dl.MaxMsgBytes)
	defInt(&c.Limits.MaxEntriesPerMsg, dl.MaxEntriesPerMsg)
	defInt(&c.ConnsPerPeer, 1)
	defInt(&c.QueueBytes, 16<<20)
	defInt(&c.QueueMsgs, 65536)
	defInt(&c.FlushBytes, 256<<10)
	defInt(&c.MaxInboundConns, 1024)
	defInt(&c.MaxPendingPerHost, 16)
	def(&c.FlushInterval, time.Millisecond)
	def(&c.DialTimeout, 2*time.Second)
	def(&c.HandshakeTimeout, 5*time.Second)
	def(&c.WriteTimeout, 10*time.Second)
	def(&c.IdleTimeout, 30*time.Second)
	def(&c.KeepAlive, c.IdleTimeout/3)
	def(&c.BackoffMin, 50*time.Millisecond)
	def(&c.BackoffMax, 2*time.Second)
	if c.Metrics == nil {
		c.Metrics = metrics.Default()
	}
	if c.Log == nil {
		c.Log = logrus.NewEntry(logrus.StandardLogger())
	}
	c.Log = c.Log.WithFields(logrus.Fields{"component": "raft-transport", "node": c.NodeID})
}

func (c *Config) validate() error {
	switch {
	case c.NodeID == 0:
		return errors.New("node id 0 is raft's None")
	case c.CurrentClusterID == nil && (len(c.ClusterID) == 0 || len(c.ClusterID) > maxClusterIDLen):
		return fmt.Errorf("cluster id length %d not in 1..%d", len(c.ClusterID), maxClusterIDLen)
	case c.Auth != nil && c.Auth.Keys == nil:
		return errors.New("Auth needs Keys")
	case c.Resolve == nil || c.Handler == nil:
		return errors.New("Resolve and Handler are required")
	case c.ConnsPerPeer < 1 || c.ConnsPerPeer > 2:
		return fmt.Errorf("ConnsPerPeer %d not 1 or 2", c.ConnsPerPeer)
	case c.KeepAlive >= c.IdleTimeout:
		return fmt.Errorf("KeepAlive %s must be under IdleTimeout %s", c.KeepAlive, c.IdleTimeout)
	case c.QueueBytes < c.Limits.MaxMsgBytes:
		return fmt.Errorf("QueueBytes %d cannot hold one message of MaxMsgBytes %d", c.QueueBytes, c.Limits.MaxMsgBytes)
	}
	if c.TLS != nil {
		if err := c.TLS.validate(); err != nil {
			return err
		}
	}
	return c.Limits.validate()
}

// Stats are the transport's counters since New, for tests and debugging;
// the same figures go to go-metrics.
type Stats struct {
	MsgsSent, MsgsReceived     uint64
	BytesSent, BytesReceived   uint64
	FramesSent, FramesReceived uint64
	Writes                     uint64 // write calls on connections (a write carries many frames)
	DroppedQueueFull           uint64
	DroppedUnreachable         uint64
	DroppedInvalid             uint64 // too large, not from this node, to itself
	Reconnects                 uint64 // connections re-established after one broke or failed
	Refused                    uint64 // inbound connections closed for a TLS, handshake or protocol fault
}

type counters struct {
	msgsSent, msgsReceived     atomic.Uint64
	bytesSent, bytesReceived   atomic.Uint64
	framesSent, framesReceived atomic.Uint64
	writes                     atomic.Uint64
	droppedQueueFull           atomic.Uint64
	droppedUnreachable         atomic.Uint64
	droppedInvalid             atomic.Uint64
	reconnects                 atomic.Uint64
	refused                    atomic.Uint64
}

// Transport sends and receives the Raft messages of every group on a node.
type Transport struct {
	cfg Config
	log *logrus.Entry
	ln  net.Listener
	c   counters

	stop chan struct{}
	wg   sync.WaitGroup
	sem  chan struct{} // bounds inbound connections
	// refusals bounds the warnings of refused connections (refusal_log.go).
	refusals refusalLog

	mu      sync.RWMutex
	links   map[uint64][]*link // by destination node, ConnsPerPeer each
	inbound map[net.Conn]struct{}
	pending map[string]int // handshakes under way by remote IP
	closed  bool
	down    atomic.Bool // closed, readable without mu
}

// New listens on cfg.ListenAddr and starts accepting peers. Outbound
// connections are dialled on the first message to each peer.
func New(cfg Config) (*Transport, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("raft transport config: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("raft transport listen on %s: %w", cfg.ListenAddr, err)
	}
	t := &Transport{
		cfg:     cfg,
		log:     cfg.Log,
		ln:      ln,
		stop:    make(chan struct{}),
		sem:     make(chan struct{}, cfg.MaxInboundConns),
		links:   make(map[uint64][]*link),
		inbound: make(map[net.Conn]struct{}),
		pending: make(map[string]int),
	}
	t.wg.Add(1)
	go t.acceptLoop()
	return t, nil
}

// Addr is the address the transport listens on.
func (t *Transport) Addr() net.Addr { return t.ln.Addr() }

// Send queues m for node m.To in group g and returns at once; it never
// blocks on the network. It returns false when the message was dropped
// (queue full, too large, or not addressed from this node to another);
// raft retransmits what is lost.
func (t *Transport) Send(g GroupKey, m *raftpb.Message) bool {
	if t.down.Load() {
		return false
	}
	to := m.GetTo()
	if m.GetFrom() != t.cfg.NodeID || to == t.cfg.NodeID || to == 0 {
		t.dropInvalid(g, m, fmt.Sprintf("message from %d to %d on node %d", m.GetFrom(), to, t.cfg.NodeID))
		return false
	}
	l := t.link(to, g)
	if l == nil {
		return false // closed
	}
	return l.enqueue(g, m)
}

func (t *Transport) dropInvalid(g GroupKey, m *raftpb.Message, why string) {
	t.c.droppedInvalid.Add(1)
	t.cfg.Metrics.IncrCounterWithLabels([]string{"replication", "transport", "dropped"}, 1,
		[]metrics.Label{{Name: "reason", Value: "invalid"}})
	t.log.WithFields(logrus.Fields{"group": g.String(), "type": m.GetType().String(), "to": m.GetTo()}).
		Warnf("raft message dropped: %s", why)
}

// link returns the connection that carries group g to node to, creating
// the peer's links (and their writers) on first use.
func (t *Transport) link(to uint64, g GroupKey) *link {
	i := 0
	if t.cfg.ConnsPerPeer > 1 {
		i = int(groupHash(g) % uint32(t.cfg.ConnsPerPeer))
	}
	t.mu.RLock()
	ls, ok := t.links[to]
	t.mu.RUnlock()
	if ok {
		return ls[i]
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	if ls, ok = t.links[to]; !ok {
		ls = make([]*link, t.cfg.ConnsPerPeer)
		for j := range ls {
			ls[j] = newLink(t, to)
			t.wg.Add(1)
			go ls[j].run()
		}
		t.links[to] = ls
	}
	return ls[i]
}

// Flush has every peer's writer write what is queued now, without waiting
// out FlushInterval: the raft driver calls it after sending the messages of
// one round of Readys, so a round leaves as one write per connection.
func (t *Transport) Flush() {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, ls := range t.links {
		for _, l := range ls {
			l.flush()
		}
	}
}

// groupHash is FNV-1a over the key, to spread groups over a peer's links.
func groupHash(g GroupKey) uint32 {
	h := uint32(2166136261)
	for _, b := range g.Topic {
		h = (h ^ uint32(b)) * 16777619
	}
	for s := 0; s < 32; s += 8 {
		h = (h ^ uint32(byte(g.Partition>>s))) * 16777619
	}
	return h
}

// Stats returns the counters so far.
func (t *Transport) Stats() Stats {
	c := &t.c
	return Stats{
		MsgsSent: c.msgsSent.Load(), MsgsReceived: c.msgsReceived.Load(),
		BytesSent: c.bytesSent.Load(), BytesReceived: c.bytesReceived.Load(),
		FramesSent: c.framesSent.Load(), FramesReceived: c.framesReceived.Load(),
		Writes:           c.writes.Load(),
		DroppedQueueFull: c.droppedQueueFull.Load(), DroppedUnreachable: c.droppedUnreachable.Load(),
		DroppedInvalid: c.droppedInvalid.Load(),
		Reconnects:     c.reconnects.Load(), Refused: c.refused.Load(),
	}
}

// Close stops accepting, closes every connection and waits for the
// transport's goroutines. Messages still queued are dropped uncounted.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.down.Store(true)
	close(t.stop)
	err := t.ln.Close()
	for c := range t.inbound {
		c.Close()
	}
	var links []*link
	for _, ls := range t.links {
		links = append(links, ls...)
	}
	t.mu.Unlock()
	for _, l := range links {
		l.closeConn()
	}
	t.wg.Wait()
	return err
}
