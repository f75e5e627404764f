package node

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/membership"
)

// With AutoRebalance, a fourth node joining a cluster of three moves the
// replicated partitions that placement over the new roster puts on it,
// at most RebalanceMaxMoves under way at once (started by the lowest
// live broker), and nothing else: a topic
// created with a manual assignment stays as it was, and once done every
// other partition's replicas are the set placement chooses.
func TestAutoRebalanceOnJoin(t *testing.T) {
	adjust := func(c *Config) { c.AutoRebalance, c.RebalanceMaxMoves = true, 1 }
	nodes := startClusterWith(t, 3, adjust)
	startReplicatedTopic(t, nodes, "auto", 6, 3)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = append(req.Topics, assignmentRequest(-1, -1, map[int32][]int32{0: {1, 2, 3}, 1: {3, 2, 1}}, 0, 1))
	req.TimeoutMillis = 10_000
	if resp := rawRequest[*kmsg.CreateTopicsResponse](t, newClient(t, nodes[0]), req); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create pinned: %+v", resp.Topics[0])
	}
	waitTopic(t, nodes, "pinned")

	cfg := testConfig(t, t.TempDir())
	cfg.NodeID = 4
	cfg.Gossip.Join = []string{nodes[0].Membership().Local().GossipAddr}
	adjust(&cfg)
	nodes = append(nodes, startNode(t, cfg))
	waitMembers(t, nodes, 4)

	// The bound, as every node's catalog shows it over the run.
	var most atomic.Int32
	done := make(chan struct{})
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
	roster := []int32{1, 2, 3, 4}
	want := membership.PlaceTopic("auto", 6, roster, 3)
	moves := 0
	for p := range want {
		if !sameSet(want[p], []int32{1, 2, 3}) {
			moves++
		}
	}
	if moves == 0 {
		t.Fatal("placement over four brokers moves nothing: the test shows nothing")
	}
	retry.Run(t, 90*time.Second, func() error {
		for _, n := range nodes {
			s, _ := n.catalog.Topic("auto")
			if len(s.Moves) != 0 {
				return fmt.Errorf("node %d: moves %v", n.NodeID(), s.Moves)
			}
			for p, rs := range s.Replicas {
				if !sameSet(rs, want[p]) {
					return fmt.Errorf("node %d: partition %d on %v, placement %v", n.NodeID(), p, rs, want[p])
				}
			}
		}
		return nil
	})
	close(done)
	for _, n := range nodes {
		s, _ := n.catalog.Topic("pinned")
		if !slices.Equal(s.Replicas[0], []int32{1, 2, 3}) || !slices.Equal(s.Replicas[1], []int32{3, 2, 1}) {
			t.Errorf("node %d: the pinned topic moved: %v", n.NodeID(), s.Replicas)
		}
	}
	// One node starts moves; a node's catalog may show one more for a
	// moment (one topic's end arriving after another's start).
	if m := most.Load(); m > 2 {
		t.Errorf("%d moves under way at once, bound 1", m)
	}
	t.Logf("%d partitions moved; at most %d under way at once (bound 1)", moves, most.Load())
}

// Rebalancing moves nothing onto a broker of the roster that is down: the
// move could not finish, and would hold a slot of RebalanceMaxMoves.
func TestAutoRebalanceSkipsBrokersDown(t *testing.T) {
	nodes := startCluster(t, 3)
	startReplicatedTopic(t, nodes, "dead-target", 6, 3)
	cfg := testConfig(t, t.TempDir())
	cfg.NodeID = 4
	cfg.Gossip.Join = []string{nodes[0].Membership().Local().GossipAddr}
	fourth := startNode(t, cfg)
	waitMembers(t, append(slices.Clone(nodes), fourth), 4)
	stopNode(t, fourth)
	retry.Run(t, 30*time.Second, func() error {
		return retry.Check(!nodes[0].agent.IsAlive(4) && slices.Contains(nodes[0].agent.Roster(), 4),
			"broker 4 alive %v, roster %v", nodes[0].agent.IsAlive(4), nodes[0].agent.Roster())
	})
	e, _ := nodes[0].agent.Topic("dead-target")
	onto4 := 0
	for _, rs := range membership.PlaceTopic(e.Name, e.Partitions, nodes[0].agent.Roster(), 3) {
		if slices.Contains(rs, 4) {
			onto4++
		}
	}
	if onto4 == 0 {
		t.Fatal("placement over the roster puts nothing on broker 4: the test proves nothing")
	}
	nodes[0].mover.StartRebalance()
	for _, e := range nodes[0].agent.MovingTopics() {
		for _, m := range e.Moves {
			if slices.Contains(m.Target, 4) {
				t.Fatalf("rebalance started a move onto broker 4, which is down: %+v", m)
			}
		}
	}
}
