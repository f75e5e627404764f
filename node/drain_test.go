package node

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/membership"
)

// watchMoves records the most moves any node's catalog shows under way at
// once, until the test ends.
func watchMoves(t *testing.T, nodes []*Node) *atomic.Int32 {
	var most atomic.Int32
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			for _, n := range nodes {
				moving := int32(0)
				for _, e := range n.agent.MovingTopics() {
					moving += int32(len(e.Moves))
				}
				if moving > most.Load() {
					most.Store(moving)
				}
			}
		}
	}()
	return &most
}

// replaced is list with b's place taken by one broker outside list: the
// drain's minimal move.
func replaced(t *testing.T, before, after []int32, b int32) {
	t.Helper()
	i := slices.Index(before, b)
	if i < 0 {
		if !slices.Equal(before, after) {
			t.Errorf("replicas %v without the drained broker became %v", before, after)
		}
		return
	}
	if len(after) != len(before) || slices.Contains(before, after[i]) {
		t.Errorf("replicas %v became %v: want %d's place taken by a new broker", before, after, b)
		return
	}
	for j := range before {
		if j != i && before[j] != after[j] {
			t.Errorf("replicas %v became %v: want only %d's place changed", before, after, b)
		}
	}
}

func postAdmin(t *testing.T, n *Node, path string) (int, string) {
	t.Helper()
	resp, err := http.Post("http://"+n.AdminAddr()+path, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// spool decommission on a live broker of four holding replicas of
// replication-factor-3 topics, one of them (led by that broker) under a
// steady acks=all producer: a replication-factor-1 partition on it
// refuses the decommission until it is gone; then the broker is out of
// placement at once (a topic created meanwhile is not placed on it), its
// partitions move off it at most RebalanceMaxMoves at a time, each
// replica list with only the drained broker's place changed, and it leaves
// the roster holding nothing. Every acknowledged record is read back, and
// the producer saw no error (franz-go retries the retriable ones).
func TestDecommissionDrainsALiveBroker(t *testing.T) {
	nodes := startClusterWith(t, 4, func(c *Config) { c.RebalanceMaxMoves = 2 })
	const topic = "drained"
	spec := startReplicatedTopic(t, nodes, topic, 1, 3)
	victim := spec.Replicas[0][0] // the preferred leader: leadership moves too
	others := startReplicatedTopic(t, nodes, "others", 8, 3)
	byID := map[int32]*Node{}
	var rest []*Node
	for _, n := range nodes {
		byID[n.NodeID()] = n
		if n.NodeID() != victim {
			rest = append(rest, n)
		}
	}

	// A single-copy partition on the broker refuses the decommission.
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = append(req.Topics, assignmentRequest(-1, -1, map[int32][]int32{0: {victim}}, 0))
	req.Topics[0].Topic = "single"
	req.TimeoutMillis = 10_000
	if resp := rawRequest[*kmsg.CreateTopicsResponse](t, newClient(t, nodes[0]), req); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create single: %+v", resp.Topics[0])
	}
	waitTopic(t, nodes, "single")
	decommission := fmt.Sprintf("/v1/roster/decommission?id=%d", victim)
	if code, body := postAdmin(t, nodes[0], decommission); code != http.StatusConflict || !strings.Contains(body, "single/0") {
		t.Fatalf("decommission with a single-copy partition on the broker: %d %s, want 409 naming single/0", code, body)
	}
	if _, err := newAdmin(t, nodes[0]).DeleteTopics(testCtx(t), "single"); err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 20*time.Second, func() error {
		_, ok := nodes[0].catalog.Topic("single")
		return retry.Check(!ok, "single not deleted yet")
	})

	held := 1
	for _, rs := range others.Replicas {
		if slices.Contains(rs, victim) {
			held++
		}
	}
	h := startAckedHistory(t, nodes, topic)
	h.waitMore(t, 50)
	most := watchMoves(t, nodes)
	start := time.Now()
	if code, body := postAdmin(t, nodes[0], decommission); code != http.StatusOK {
		t.Fatalf("decommission: %d %s", code, body)
	}
	retry.Run(t, 20*time.Second, func() error {
		for _, n := range nodes {
			if slices.Contains(n.agent.Roster(), victim) {
				return fmt.Errorf("node %d still places on %d: %v", n.NodeID(), victim, n.agent.Roster())
			}
		}
		return nil
	})
	fresh := startReplicatedTopic(t, nodes, "fresh", 8, 3)
	for p, rs := range fresh.Replicas {
		if slices.Contains(rs, victim) {
			t.Errorf("fresh/%d placed on the draining broker: %v", p, rs)
		}
	}

	retry.Run(t, 120*time.Second, func() error {
		for _, n := range nodes {
			for _, e := range n.agent.RosterEntries() {
				if e.ID == victim && !e.Decommissioned {
					return fmt.Errorf("node %d: %d not removed yet (%s)", n.NodeID(), victim, n.agent.DrainProgress(victim).State)
				}
			}
		}
		for _, name := range []string{topic, "others"} {
			for p := range int32(8) {
				if p >= map[string]int32{topic: 1, "others": 8}[name] {
					break
				}
				if byID[victim].parts.Get(name, p) != nil {
					return fmt.Errorf("the drained broker still holds %s/%d", name, p)
				}
			}
		}
		return nil
	})
	took := time.Since(start)
	h.waitMore(t, 50)
	keys, offs := h.finish(t)

	for name, before := range map[string]TopicSpec{topic: spec, "others": others} {
		after, _ := nodes[0].catalog.Topic(name)
		if len(after.Moves) != 0 {
			t.Errorf("%s: moves left %v", name, after.Moves)
		}
		for p := range before.Replicas {
			replaced(t, before.Replicas[p], after.Replicas[p], victim)
		}
	}
	if got := most.Load(); got > 2 {
		t.Errorf("%d moves under way at once, bound 2", got)
	}
	if st := rest[0].agent.DrainProgress(victim); st.State != "decommissioned" || len(st.Partitions) != 0 {
		t.Errorf("progress after the drain: %+v", st)
	}
	checkReadBack(t, rest, topic, keys, offs)
	t.Logf("drained %d partitions off broker %d in %v; %d records acknowledged", held, victim, took.Round(time.Millisecond), len(keys))
}

// With automatic rebalancing and a short failed-broker grace, a stopped
// broker is not drained while within the grace (nothing moves), and is
// after it: its replicas are replaced on the live brokers, the partitions
// back at full replication, and the broker stays in the roster entries,
// drained, not removed. Started again, it is an empty broker of the
// roster again, no longer drained.
func TestDecommissionGraceDrainsAFailedBroker(t *testing.T) {
	const grace = 4 * time.Second
	nodes := startClusterWith(t, 4, func(c *Config) {
		c.AutoRebalance, c.RebalanceMaxMoves, c.FailedBrokerGrace = true, 2, grace
	})
	spec := startReplicatedTopic(t, nodes, "graced", 6, 3)
	victim := nodes[3]
	held := 0
	for _, rs := range spec.Replicas {
		if slices.Contains(rs, victim.NodeID()) {
			held++
		}
	}
	if held == 0 {
		t.Fatal("broker 4 holds no replica: the test proves nothing")
	}
	rest := nodes[:3]
	restartCfg := victim.cfg
	// Counted from before the stop: a graceful stop leaves gossip first,
	// then closes its partitions, which can take longer than the margin
	// below, and the starter's grace runs from when it sees the leave.
	stopped := time.Now()
	stopNode(t, victim)

	// Within the grace (counted from the stop: the starter notices later),
	// nothing moves and the broker is not drained.
	for tick := time.NewTicker(100 * time.Millisecond); time.Since(stopped) < grace-500*time.Millisecond; <-tick.C {
		for _, n := range rest {
			e, _ := n.catalog.Topic("graced")
			if len(e.Moves) > 0 || !slices.Equal(slices.Concat(e.Replicas...), slices.Concat(spec.Replicas...)) {
				t.Fatalf("%v after the stop, within the grace: node %d moves %v replicas %v", time.Since(stopped), n.NodeID(), e.Moves, e.Replicas)
			}
			if len(n.agent.DrainingBrokers()) > 0 {
				t.Fatalf("within the grace: node %d drains %v", n.NodeID(), n.agent.DrainingBrokers())
			}
		}
	}

	retry.Run(t, 90*time.Second, func() error {
		for _, n := range rest {
			e, _ := n.catalog.Topic("graced")
			if len(e.Moves) > 0 {
				return fmt.Errorf("node %d: moves %v", n.NodeID(), e.Moves)
			}
			for p, rs := range e.Replicas {
				if slices.Contains(rs, victim.NodeID()) || len(rs) != 3 {
					return fmt.Errorf("node %d: graced/%d on %v", n.NodeID(), p, rs)
				}
			}
		}
		return nil
	})
	drainedAt := time.Since(stopped)
	if drainedAt < grace {
		t.Errorf("drained %v after the stop, before the grace %v", drainedAt, grace)
	}
	for _, n := range rest {
		var entry membership.RosterEntry
		for _, e := range n.agent.RosterEntries() {
			if e.ID == victim.NodeID() {
				entry = e
			}
		}
		if !entry.DrainAuto() || entry.Decommissioned {
			t.Errorf("node %d: roster entry of the failed broker %+v, want an automatic drain", n.NodeID(), entry)
		}
	}
	// Every partition has a leader and three voters on live brokers.
	retry.Run(t, 30*time.Second, func() error {
		for p := range int32(6) {
			l, err := partitionLeader(rest, "graced", p)
			if err != nil {
				return err
			}
			conf, _ := l.parts.Get("graced", p).Replica.Conf()
			if len(conf.Voters) != 3 || slices.Contains(conf.Voters, victim.NodeID()) {
				return fmt.Errorf("graced/%d voters %v", p, conf.Voters)
			}
		}
		return nil
	})

	restartCfg.KafkaAddr, restartCfg.AdminAddr, restartCfg.RaftAddr, restartCfg.Gossip.BindAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	restartCfg.Gossip.Join = []string{nodes[0].Membership().Local().GossipAddr}
	back := startNode(t, restartCfg)
	retry.Run(t, 30*time.Second, func() error {
		for _, n := range append(slices.Clone(rest), back) {
			if !slices.Contains(n.agent.Roster(), back.NodeID()) || len(n.agent.DrainingBrokers()) > 0 {
				return fmt.Errorf("node %d: roster %v, draining %v", n.NodeID(), n.agent.Roster(), n.agent.DrainingBrokers())
			}
		}
		return nil
	})
	t.Logf("stopped broker drained %v after the stop (grace %v)", drainedAt.Round(time.Millisecond), grace)
}
