package node

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
)

// TestReplicationMetricsAndReadyz: three nodes, one partition of
// replication factor 3. /metrics shows partitions led, no under-replicated
// or offline partitions, an election won, acks=all commit latencies and
// the transport's bytes; a follower shut down makes the leader's partition
// under-replicated. The follower restarts while its leader's messages
// cannot reach it (its advertised Raft address is a proxy that refuses
// until the test opens it, a one-way network fault): its /readyz says 503,
// catching up, and its catching-up gauge is 1; once the proxy forwards,
// /readyz says 200 only with every acknowledged record below its high
// watermark, and the partition is fully replicated again.
func TestReplicationMetricsAndReadyz(t *testing.T) {
	nodes := startCluster(t, 3)
	const topic = "metered"
	spec := startReplicatedTopic(t, nodes, topic, 1, 3)
	pref := spec.Replicas[0][0]
	var lead *Node
	retry.Run(t, 30*time.Second, func() error {
		var err error
		if lead, err = partitionLeader(nodes, topic, 0); err != nil {
			return err
		}
		if lead.NodeID() != pref {
			return fmt.Errorf("leader %d, preferred %d", lead.NodeID(), pref)
		}
		return retry.Check(len(lead.parts.Get(topic, 0).Replica.ISR()) == 3, "ISR %v", lead.parts.Get(topic, 0).Replica.ISR())
	})
	var follower, other *Node
	for _, n := range nodes {
		switch {
		case n == lead:
		case follower == nil:
			follower = n
		default:
			other = n
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(lead.KafkaAddr()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produced := 0
	produce := func(count int) {
		t.Helper()
		for range count {
			r := &kgo.Record{Key: []byte(recordKey(produced)), Value: []byte(recordValue(produced))}
			if err := cl.ProduceSync(testCtx(t), r).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", produced, err)
			}
			produced++
		}
	}
	produce(50)

	retry.Run(t, 20*time.Second, func() error {
		lm := scrapeMetrics(lead)
		for _, want := range []struct {
			series string
			ok     func(float64) bool
			what   string
		}{
			{"spool_partitions_led", eq(1), "1"},
			{"spool_replication_under_replicated_partitions", eq(0), "0"},
			{"spool_replication_offline_partitions", eq(0), "0"},
			{"spool_replication_replicas_catching_up", eq(0), "0"},
			{"spool_replication_leader_elections_won", atLeast(1), ">= 1"},
			{`spool_replication_commit_seconds_count{replicated="true"}`, atLeast(50), ">= 50"},
			{"spool_replication_transport_bytes_sent", atLeast(1), "> 0"},
		} {
			if err := lm.check(want.series, want.ok, want.what); err != nil {
				return fmt.Errorf("leader %d: %w", lead.NodeID(), err)
			}
		}
		for _, n := range []*Node{follower, other} {
			fm := scrapeMetrics(n)
			for _, err := range []error{
				fm.check("spool_partitions_led", eq(0), "0"),
				fm.check("spool_replication_offline_partitions", eq(0), "0"),
				fm.check("spool_replication_replicas_catching_up", eq(0), "0"),
				fm.check("spool_replication_transport_bytes_received", atLeast(1), "> 0"),
			} {
				if err != nil {
					return fmt.Errorf("follower %d: %w", n.NodeID(), err)
				}
			}
		}
		return nil
	})
	// Idle, the group sleeps on all three.
	retry.Run(t, 20*time.Second, func() error {
		for _, n := range []*Node{lead, follower, other} {
			if err := scrapeMetrics(n).check("spool_replication_quiesced_replicas", eq(1), "1"); err != nil {
				return fmt.Errorf("node %d: %w", n.NodeID(), err)
			}
		}
		return nil
	})

	// A follower goes: the leader's partition is under-replicated.
	fcfg := follower.cfg
	stopNode(t, follower)
	retry.Run(t, 20*time.Second, func() error {
		return scrapeMetrics(lead).check("spool_replication_under_replicated_partitions", eq(1), "1")
	})
	produce(200) // committed by the leader and the other follower

	// It comes back with its leader's messages held up.
	proxy := newHoldProxy(t)
	fcfg.Gossip.Join = []string{lead.Membership().Local().GossipAddr}
	fcfg.RaftAddr = proxy.target
	fcfg.AdvertisedRaftAddr = proxy.Addr()
	back := startNode(t, fcfg)
	retry.Run(t, 30*time.Second, func() error {
		code, body := getAdmin(back, "/readyz")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "behind their leader") {
			return fmt.Errorf("/readyz %d %q, want 503 catching up", code, body)
		}
		return scrapeMetrics(back).check("spool_replication_replicas_catching_up", eq(1), "1")
	})
	if hw, want := back.parts.Get(topic, 0).Replica.HighWatermark(), int64(produced); hw >= want {
		t.Fatalf("the held-up follower already has high watermark %d of %d", hw, want)
	}

	proxy.open()
	retry.Run(t, 30*time.Second, func() error {
		code, body := getAdmin(back, "/readyz")
		return retry.Check(code == http.StatusOK, "/readyz %d %q", code, body)
	})
	// Ready means caught up: every acknowledged record is below its high
	// watermark already, not eventually.
	if hw := back.parts.Get(topic, 0).Replica.HighWatermark(); hw < int64(produced) {
		t.Errorf("ready with high watermark %d, %d records acknowledged", hw, produced)
	}
	retry.Run(t, 30*time.Second, func() error {
		if err := scrapeMetrics(back).check("spool_replication_replicas_catching_up", eq(0), "0"); err != nil {
			return err
		}
		return scrapeMetrics(lead).check("spool_replication_under_replicated_partitions", eq(0), "0")
	})
}

func eq(v float64) func(float64) bool      { return func(x float64) bool { return x == v } }
func atLeast(v float64) func(float64) bool { return func(x float64) bool { return x >= v } }

// metricsText is a /metrics answer: series (name and labels) -> value.
type metricsText map[string]float64

func (m metricsText) check(series string, ok func(float64) bool, want string) error {
	v, found := m[series]
	if !found {
		return fmt.Errorf("/metrics has no %s", series)
	}
	if !ok(v) {
		return fmt.Errorf("%s = %v, want %s", series, v, want)
	}
	return nil
}

// scrapeMetrics reads n's /metrics; an empty map when it cannot.
func scrapeMetrics(n *Node) metricsText {
	out := metricsText{}
	code, body := getAdmin(n, "/metrics")
	if code != http.StatusOK {
		return out
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// getAdmin GETs path from n's admin API: status and body, 0 on failure.
func getAdmin(n *Node, path string) (int, string) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + n.AdminAddr() + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// holdProxy is a TCP proxy in front of a free loopback port (target): it
// closes every connection until open, then forwards them.
type holdProxy struct {
	ln     net.Listener
	target string
	opened atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newHoldProxy(t *testing.T) *holdProxy {
	t.Helper()
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := probe.Addr().String()
	probe.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &holdProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *holdProxy) Addr() string { return p.ln.Addr().String() }
func (p *holdProxy) open()        { p.opened.Store(true) }

func (p *holdProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.opened.Load() {
			c.Close()
			continue
		}
		d, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, d)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, d)
		go p.pipe(d, c)
	}
}

func (p *holdProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}
