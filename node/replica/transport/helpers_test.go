package transport

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-metrics"
	"github.com/sirupsen/logrus"
	"go.etcd.io/raft/v3/raftpb"
)

// eventually polls cond until it returns nil or the deadline passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %v: %v", what, timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testLog sends logs to t.Log while the test runs and drops them after.
type testLog struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

type received struct {
	from uint64
	g    GroupKey
	m    *raftpb.Message
}

type inbox struct {
	mu   sync.Mutex
	msgs []received
}

func (in *inbox) handle(from uint64, g GroupKey, m *raftpb.Message) {
	in.mu.Lock()
	in.msgs = append(in.msgs, received{from, g, m})
	in.mu.Unlock()
}

func (in *inbox) snapshot() []received {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]received(nil), in.msgs...)
}

func (in *inbox) count() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.msgs)
}

// reports records what the transport told the raft driver.
type reports struct {
	mu          sync.Mutex
	unreachable map[GroupKey]int
	snapOK      int
	snapFailed  int
}

func (r *reports) unreach(g GroupKey, node uint64) {
	r.mu.Lock()
	r.unreachable[g]++
	r.mu.Unlock()
}

func (r *reports) snap(g GroupKey, node uint64, ok bool) {
	r.mu.Lock()
	if ok {
		r.snapOK++
	} else {
		r.snapFailed++
	}
	r.mu.Unlock()
}

func (r *reports) unreachableFor(g GroupKey) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unreachable[g]
}

// cluster is a set of transports on loopback with a shared address book.
// A gate on a node makes Resolve for it wait, so messages pile up in the
// sender's queue before the connection exists.
type cluster struct {
	t     testing.TB
	mu    sync.Mutex
	addrs map[uint64]string
	gates map[uint64]chan struct{}
}

func newCluster(t testing.TB) *cluster {
	return &cluster{t: t, addrs: map[uint64]string{}, gates: map[uint64]chan struct{}{}}
}

func (c *cluster) resolve(id uint64) (string, bool) {
	c.mu.Lock()
	gate := c.gates[id]
	c.mu.Unlock()
	if gate != nil {
		<-gate
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.addrs[id]
	return a, ok
}

// hold makes Resolve(id) wait until the returned func is called (also at cleanup).
func (c *cluster) hold(id uint64) (release func()) {
	gate := make(chan struct{})
	c.mu.Lock()
	c.gates[id] = gate
	c.mu.Unlock()
	var once sync.Once
	release = func() {
		once.Do(func() {
			c.mu.Lock()
			delete(c.gates, id)
			c.mu.Unlock()
			close(gate)
		})
	}
	c.t.Cleanup(release)
	return release
}

type node struct {
	*Transport
	in   *inbox
	rep  *reports
	sink *metrics.InmemSink
}

// start runs a transport for node id of cluster cid on addr ("" = any port).
func (c *cluster) start(id uint64, cid, addr string, mod func(*Config)) *node {
	c.t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	lw := &testLog{t: c.t}
	logger := logrus.New()
	logger.SetOutput(lw)
	logger.SetLevel(logrus.DebugLevel)
	sink := metrics.NewInmemSink(time.Hour, time.Hour)
	mcfg := metrics.DefaultConfig("spool")
	mcfg.EnableHostname, mcfg.EnableRuntimeMetrics = false, false
	m, err := metrics.New(mcfg, sink)
	if err != nil {
		c.t.Fatal(err)
	}
	n := &node{in: &inbox{}, rep: &reports{unreachable: map[GroupKey]int{}}, sink: sink}
	cfg := Config{
		NodeID: id, ClusterID: cid, ListenAddr: addr,
		Resolve: c.resolve, Handler: n.in.handle,
		Unreachable: n.rep.unreach, SnapshotStatus: n.rep.snap,
		BackoffMin: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond,
		Metrics: m, Log: logrus.NewEntry(logger),
	}
	if mod != nil {
		mod(&cfg)
	}
	tr, err := New(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	n.Transport = tr
	c.mu.Lock()
	c.addrs[id] = tr.Addr().String()
	c.mu.Unlock()
	c.t.Cleanup(func() {
		tr.Close()
		lw.mu.Lock()
		lw.done = true
		lw.mu.Unlock()
	})
	return n
}

// counter reads a counter from a node's go-metrics sink.
func (n *node) counter(name string) float64 {
	total := 0.0
	for _, iv := range n.sink.Data() {
		for k, c := range iv.Counters {
			if strings.HasPrefix(k, "spool."+name) {
				total += c.Sum
			}
		}
	}
	return total
}

func heartbeat(from, to, term uint64) *raftpb.Message {
	m := msg(raftpb.MsgHeartbeat, from, to, term)
	m.Commit = u64(term * 2)
	return m
}

func waitCount(t testing.TB, in *inbox, n int) {
	t.Helper()
	eventually(t, 20*time.Second, fmt.Sprintf("%d messages received", n), func() error {
		if got := in.count(); got != n {
			return fmt.Errorf("%d received", got)
		}
		return nil
	})
}
