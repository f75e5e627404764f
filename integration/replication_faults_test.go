package integration

// Replication under real faults (issue 14, "What must show"): 3 or 5 real
// `spool node` processes, a topic with R=3 and several partitions, a
// continuous acks=all load and a group consumer committing offsets
// (replication_load_test.go); a fault mid-stream, then recovery; and the
// history checker over everything acknowledged. Each test repeats its
// fault SPOOL_SOAK_CYCLES times (1 in CI), e.g.
//
//	SPOOL_SOAK_CYCLES=50 go test ./integration/ -run 'TestReplication' -timeout 0 -v
//
// and prints the cycles run and the records checked.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/fulldisk"
)

const (
	replPartitions = 4
	// replBatch is how many records each partition must acknowledge to
	// show progress at each step.
	replBatch = 50
	// replStep bounds each eventually-true step: an election, a restart, a
	// catch-up.
	replStep = 90 * time.Second
)

// replication is one running scenario.
type replication struct {
	nodes []*Node
	topic string
	w     *workload
}

func (r *replication) seeds() []string { return kafkaAddrs(r.nodes) }

// startReplication creates an R=3 topic on nodes and starts the load.
func startReplication(t *testing.T, nodes []*Node) *replication {
	t.Helper()
	r := &replication{nodes: nodes, topic: uniqueTopic("repl")}
	createReplicatedTopic(t, nodes, r.topic, replPartitions, 3)
	r.w = startWorkload(t, r.seeds(), r.topic, replPartitions)
	r.w.waitProgress(t, nil, replBatch, replStep, "before any fault")
	return r
}

// finish checks the history and prints the soak figures.
func (r *replication) finish(t *testing.T, cycles int) {
	t.Helper()
	res := r.w.check(t, r.seeds())
	t.Logf("SOAK: %s: %d cycles, %d records checked (%d acknowledged, %d unknown, %d failed definitely), %d group commits",
		t.Name(), cycles, res.Checked, res.Acked, res.Unknown, res.Failed, res.Commits)
}

// except returns nodes without skip.
func except(nodes []*Node, skip *Node) []*Node {
	var out []*Node
	for _, n := range nodes {
		if n != skip {
			out = append(out, n)
		}
	}
	return out
}

// exited tells whether a started process has exited on its own.
func (n *Node) exited() bool {
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// metadataLeader asks n which broker leads topic/p, without failing the
// test when n does not answer (a stopped or cut-off node).
func metadataLeader(n *Node, topic string, p int32) (int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr))
	if err != nil {
		return -1, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	raw, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return -1, fmt.Errorf("metadata from node %d: %w", n.ID, err)
	}
	resp := raw.(*kmsg.MetadataResponse)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.Partition == p {
				return rp.Leader, nil
			}
		}
	}
	return -1, fmt.Errorf("metadata from node %d: no %s/%d", n.ID, topic, p)
}

// TestReplicationKillLeader: kill -9 of a partition's leader mid-stream on
// 3 nodes; the others elect a leader and every partition keeps taking
// acks=all writes; the killed node restarts and catches up.
func TestReplicationKillLeader(t *testing.T) { testKillLeader(t, 3) }

// TestReplicationKillLeader5: the same on 5 nodes (R=3: each partition on
// three of the five).
func TestReplicationKillLeader5(t *testing.T) { testKillLeader(t, 5) }

func testKillLeader(t *testing.T, size int) {
	cycles := soakCycles(t)
	r := startReplication(t, startCluster(t, size, withQuickGroups))
	for c := 0; c < cycles; c++ {
		p := int32(c % replPartitions)
		leader := waitLeader(t, r.nodes, r.topic, p, -1, replStep)
		leader.Kill()
		t.Logf("cycle %d: killed node %d, leader of partition %d", c, leader.ID, p)
		next := waitLeader(t, except(r.nodes, leader), r.topic, p, int32(leader.ID), replStep)
		t.Logf("cycle %d: node %d leads partition %d", c, next.ID, p)
		r.w.waitProgress(t, nil, replBatch, replStep, fmt.Sprintf("cycle %d, node %d dead", c, leader.ID))
		leader.Start()
		r.w.waitProgress(t, nil, replBatch, replStep, fmt.Sprintf("cycle %d, node %d restarted", c, leader.ID))
	}
	r.finish(t, cycles)
}

// TestReplicationZombieLeader: SIGSTOP of a partition's leader until the
// others have elected another (longer than an election timeout), with a
// producer that knows only the stopped node and has requests queued in its
// socket; then SIGCONT. The stale leader must not acknowledge acks=all
// writes it cannot commit: whatever it answers, the history checker finds
// every acknowledged record at its offset.
func TestReplicationZombieLeader(t *testing.T) {
	cycles := soakCycles(t)
	r := startReplication(t, startCluster(t, 3, withQuickGroups))
	for c := 0; c < cycles; c++ {
		p := int32(c % replPartitions)
		zombie := waitLeader(t, r.nodes, r.topic, p, -1, replStep)
		// A producer bootstrapped at the zombie only: its metadata says
		// the zombie leads, so its produces go there while it is stopped.
		r.w.produce(r.w.ctx, fmt.Sprintf("z%d", c), []string{zombie.KafkaAddr}, 5*time.Millisecond)
		r.w.waitProgress(t, nil, replBatch, replStep, fmt.Sprintf("cycle %d, zombie producer started", c))
		pid := zombie.pid()
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("SIGSTOP node %d (pid %d): %v", zombie.ID, pid, err)
		}
		// Before the nodes' own cleanup (LIFO): a stopped process would
		// ignore the SIGTERM that stops it.
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
		t.Logf("cycle %d: SIGSTOP node %d, leader of partition %d", c, zombie.ID, p)
		others := except(r.nodes, zombie)
		next := waitLeader(t, others, r.topic, p, int32(zombie.ID), replStep)
		t.Logf("cycle %d: node %d leads partition %d", c, next.ID, p)
		r.w.waitProgress(t, nil, replBatch, replStep, fmt.Sprintf("cycle %d, node %d stopped", c, zombie.ID))
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatalf("SIGCONT node %d: %v", zombie.ID, err)
		}
		t.Logf("cycle %d: SIGCONT node %d", c, zombie.ID)
		r.w.waitProgress(t, nil, replBatch, replStep, fmt.Sprintf("cycle %d, node %d continued", c, zombie.ID))
	}
	r.finish(t, cycles)
}

// TestReplicationFollowerDiskFull: every node's data on its own small
// tmpfs; a follower of a partition gets its disk filled mid-stream. The
// partitions it does not lead keep taking acks=all writes (leader and the
// other follower are a majority). With space again, and no restart, it
// must mend its stopped replicas (reopened from disk), catch up and take
// part: the other follower is killed, so every partition needs it for a
// majority; then the killed node comes back.
func TestReplicationFollowerDiskFull(t *testing.T) {
	cycles := soakCycles(t)
	mounts := map[int]string{}
	for id := 1; id <= 3; id++ {
		mounts[id] = fulldisk.Mount(t, 64<<20)
	}
	onTmpfs := func(n *Node) { n.Dir = filepath.Join(mounts[n.ID], "data") }
	r := startReplication(t, startCluster(t, 3, withQuickGroups, onTmpfs))
	for c := 0; c < cycles; c++ {
		p := int32(c % replPartitions)
		leader := waitLeader(t, r.nodes, r.topic, p, -1, replStep)
		others := except(r.nodes, leader)
		full, other := others[c%2], others[(c+1)%2]
		var notLedByFull []int32
		for q := int32(0); q < replPartitions; q++ {
			if l, err := metadataLeader(leader, r.topic, q); err == nil && l != int32(full.ID) {
				notLedByFull = append(notLedByFull, q)
			}
		}
		disk := fulldisk.Fill(t, mounts[full.ID])
		t.Logf("cycle %d: node %d's disk is full (partition %d led by node %d)", c, full.ID, p, leader.ID)
		r.w.waitProgress(t, notLedByFull, replBatch, replStep, fmt.Sprintf("cycle %d, node %d's disk full", c, full.ID))
		disk.Free(t)
		// No restart: the node reopens from disk each replica whose Raft
		// group stopped on the full disk, by itself (node/hosted/mend.go), so
		// every partition has three working replicas again.
		if full.exited() {
			t.Fatalf("cycle %d: node %d exited on the full disk", c, full.ID)
		}
		t.Logf("cycle %d: node %d has space again", c, full.ID)
		r.w.waitProgress(t, nil, replBatch, replStep, fmt.Sprintf("cycle %d, node %d has space again", c, full.ID))
		full.WaitReady(2 * replStep)
		if logs := full.Logs(); !strings.Contains(logs, "stopped replica reopened") {
			t.Errorf("cycle %d: node %d reopened no stopped replica after its disk was full:\n%s", c, full.ID, logs)
		}
		other.Kill()
		t.Logf("cycle %d: killed node %d: node %d is needed for every majority", c, other.ID, full.ID)
		r.w.waitProgress(t, nil, replBatch, replStep, fmt.Sprintf("cycle %d, node %d dead", c, other.ID))
		other.Start()
		r.w.waitProgress(t, nil, replBatch, replStep, fmt.Sprintf("cycle %d, node %d restarted", c, other.ID))
	}
	r.finish(t, cycles)
}

// TestReplicationRestartAll: every node killed with SIGKILL mid-stream, then
// all restarted; everything acknowledged is still there and writes resume.
func TestReplicationRestartAll(t *testing.T) {
	cycles := soakCycles(t)
	r := startReplication(t, startCluster(t, 3, withQuickGroups))
	for c := 0; c < cycles; c++ {
		for _, n := range r.nodes {
			n.Kill()
		}
		t.Logf("cycle %d: killed every node", c)
		// Together: a node may not be ready before a majority of its
		// partitions' replicas is up.
		for _, n := range r.nodes {
			n.StartNoWait()
		}
		for _, n := range r.nodes {
			n.WaitReady(replStep)
		}
		r.w.waitProgress(t, nil, replBatch, replStep, fmt.Sprintf("cycle %d, every node restarted", c))
	}
	r.finish(t, cycles)
}
