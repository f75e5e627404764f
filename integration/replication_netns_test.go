package integration

// A network split, for real: each `spool node` runs in its own network
// namespace, joined to a bridge in the root namespace by a veth pair, all
// made by the test (as root, with iproute2's `ip`) and removed when it ends,
// failed or not. Cutting a node off is setting its veth down on the bridge
// side: it can reach neither its peers nor the test's clients.

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// netLab is a bridge with one namespace per node.
type netLab struct {
	t      *testing.T
	id     string // random, in every name, so parallel runs do not collide
	bridge string
	subnet string // first three octets
	mu     sync.Mutex
	made   []func() error // undo steps, run in reverse
}

// needIP fails (never skips) the test when iproute2's ip is missing.
func needIP(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatalf("ip not found in PATH (%v): the network-split test needs iproute2 (Debian: apt-get install -y iproute2) and root", err)
	}
}

// newNetLab makes the bridge and size namespaces, removed at cleanup (after
// the nodes in them are stopped: cleanups run last-registered first, and the
// lab is registered before its nodes).
func newNetLab(t *testing.T, size int) *netLab {
	t.Helper()
	needIP(t)
	var b [3]byte
	rand.Read(b[:])
	l := &netLab{t: t, id: hex.EncodeToString(b[:])}
	l.bridge = "spbr" + l.id
	// 10.213.X.0/24: a subnet of its own per run.
	l.subnet = fmt.Sprintf("10.213.%d", b[0])
	t.Cleanup(l.close)
	l.run("ip", "link", "add", l.bridge, "type", "bridge")
	l.undo(func() error { return l.cmd("ip", "link", "del", l.bridge) })
	l.run("ip", "addr", "add", l.subnet+".1/24", "dev", l.bridge)
	l.run("ip", "link", "set", l.bridge, "up")
	for id := 1; id <= size; id++ {
		// Both ends get unique names: the inner one is made in the root
		// namespace before it moves.
		ns, outer, inner := l.ns(id), l.veth(id), fmt.Sprintf("spn%s%d", l.id, id)
		l.run("ip", "netns", "add", ns)
		l.undo(func() error { return l.cmd("ip", "netns", "del", ns) })
		l.run("ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
		l.undo(func() error { return l.cmd("ip", "link", "del", outer) })
		l.run("ip", "link", "set", inner, "netns", ns)
		l.run("ip", "link", "set", outer, "master", l.bridge)
		l.run("ip", "link", "set", outer, "up")
		l.run("ip", "-n", ns, "link", "set", "lo", "up")
		l.run("ip", "-n", ns, "addr", "add", l.addr(id)+"/24", "dev", inner)
		l.run("ip", "-n", ns, "link", "set", inner, "up")
	}
	return l
}

func (l *netLab) ns(id int) string   { return fmt.Sprintf("spool-%s-%d", l.id, id) }
func (l *netLab) veth(id int) string { return fmt.Sprintf("spv%s%d", l.id, id) }
func (l *netLab) addr(id int) string { return fmt.Sprintf("%s.%d", l.subnet, 10+id) }

func (l *netLab) cmd(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (l *netLab) run(args ...string) {
	l.t.Helper()
	if err := l.cmd(args...); err != nil {
		l.t.Fatal(err)
	}
}

func (l *netLab) undo(f func() error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.made = append(l.made, f)
}

// close removes every namespace, veth and the bridge. A veth whose peer's
// namespace is gone is gone too, so "Cannot find device" is not an error.
func (l *netLab) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.made) - 1; i >= 0; i-- {
		if err := l.made[i](); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
			l.t.Errorf("network lab cleanup: %v", err)
		}
	}
	l.made = nil
}

// cut takes node id off the network; heal puts it back.
func (l *netLab) cut(id int)  { l.run("ip", "link", "set", l.veth(id), "down") }
func (l *netLab) heal(id int) { l.run("ip", "link", "set", l.veth(id), "up") }

// startNetnsCluster starts a node per namespace, each on its namespace's
// address, joined through the first, and waits until all see each other.
func startNetnsCluster(t *testing.T, l *netLab, size int, opts ...NodeOption) []*Node {
	t.Helper()
	var nodes []*Node
	for id := 1; id <= size; id++ {
		o := append([]NodeOption{WithID(id), func(n *Node) {
			n.KafkaAddr = l.addr(n.ID) + ":9092"
			n.AdminAddr = l.addr(n.ID) + ":9644"
			n.GossipAddr = l.addr(n.ID) + ":7946"
		}}, opts...)
		if id > 1 {
			o = append(o, WithJoin(nodes[0].GossipAddr))
		}
		n := newNode(t, o...)
		l.start(n)
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		waitMembers(t, n, 20*time.Second, func(ms map[int]member) error {
			return wantStatus(ms, size, "alive", idsOf(nodes)...)
		})
	}
	return nodes
}

// start runs n in its namespace (`ip netns exec` execs spool, so the pid
// is spool's and the harness's Kill and Stop signal it).
func (l *netLab) start(n *Node) {
	l.t.Helper()
	l.startIn(l.ns(n.ID), n)
}

// startIn runs n in namespace ns, which may hold other nodes too.
func (l *netLab) startIn(ns string, n *Node) {
	l.t.Helper()
	n.mu.Lock()
	if n.cmd != nil {
		n.mu.Unlock()
		l.t.Fatalf("node %d already running", n.ID)
	}
	args := append([]string{"netns", "exec", ns, spoolBin}, n.Args()...)
	cmd := exec.Command("ip", args...)
	cmd.Env = append(os.Environ(), n.Env...)
	fmt.Fprintf(n.logs, "=== start: ip %v\n", args)
	cmd.Stdout, cmd.Stderr = n.logs, n.logs
	if err := cmd.Start(); err != nil {
		n.mu.Unlock()
		l.t.Fatalf("start spool node %d in %s: %v", n.ID, ns, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	n.cmd, n.done = cmd, done
	n.mu.Unlock()
	n.WaitReady(30 * time.Second)
}

// TestReplicationNetworkSplit cuts a partition's leader off the network
// mid-stream: the majority side elects a leader and keeps taking acks=all
// writes; the cut-off leader cannot commit, so whatever it acknowledged (if
// anything) must be in the log. The network heals and the old leader
// rejoins as a follower, its diverged suffix (if any) truncated.
func TestReplicationNetworkSplit(t *testing.T) {
	cycles := soakCycles(t)
	lab := newNetLab(t, 3)
	r := startReplication(t, startNetnsCluster(t, lab, 3, withQuickGroups))
	for c := 0; c < cycles; c++ {
		p := int32(c % replPartitions)
		leader := waitLeader(t, r.nodes, r.topic, p, -1, replStep)
		lab.cut(leader.ID)
		t.Logf("cycle %d: cut node %d, leader of partition %d, off the network", c, leader.ID, p)
		next := waitLeader(t, except(r.nodes, leader), r.topic, p, int32(leader.ID), replStep)
		t.Logf("cycle %d: node %d leads partition %d", c, next.ID, p)
		r.w.waitProgress(t, nil, replBatch, replStep, fmt.Sprintf("cycle %d, node %d cut off", c, leader.ID))
		lab.heal(leader.ID)
		t.Logf("cycle %d: node %d back on the network", c, leader.ID)
		r.w.waitProgress(t, nil, replBatch, replStep, fmt.Sprintf("cycle %d, network healed", c))
	}
	r.finish(t, cycles)
}
