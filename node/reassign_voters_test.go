package node

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/moves"
	"github.com/spool-log/spool/node/replica"
)

// mutedTransport drops every Raft message a node sends: its replicas hear
// their leaders but are never heard, so they fall out of the ISR while
// staying voters.
type mutedTransport struct{}

func (mutedTransport) Send(replica.GroupKey, *pb.Message) bool { return false }
func (mutedTransport) Flush()                                  {}

// A voter that lags is not in its leader's ISR, and still a voter: the
// catalog leaving it out (a lost move, then a move that stalls, towards a
// broker that never comes) must not close and quarantine its replica while
// the group counts it. The leader's claim names its voters.
func TestReassignKeepsALaggingVoter(t *testing.T) {
	defer func(g time.Duration) { moves.NotVotingGrace = g }(moves.NotVotingGrace)
	moves.NotVotingGrace = 2 * time.Second
	nodes := startCluster(t, 3)
	const topic = "lagging-voter"
	spec := startReplicatedTopic(t, nodes, topic, 1, 3)
	var lead *Node
	retry.Run(t, 20*time.Second, func() error {
		var err error
		lead, err = partitionLeader(nodes, topic, 0)
		return err
	})
	var lag *Node
	for _, n := range nodes {
		if n != lead {
			lag = n
			break
		}
	}
	// Writes keep the group awake (a quiesced leader does not recompute
	// its ISR).
	h := startAckedHistory(t, nodes, topic)
	defer h.finish(t)
	h.waitMore(t, 5)
	lag.repl.Driver().SetTransport(mutedTransport{})
	outOfISR := func() error {
		c, ok := lag.leaders.Lookup(spec.ID, 0)
		if !ok {
			return errors.New("no leadership claim")
		}
		return retry.Check(c.Leader == lead.NodeID() && !slices.Contains(c.ISR, lag.NodeID()), "claim %+v", c)
	}
	retry.Run(t, 30*time.Second, outOfISR)

	const ghost = 99 // never started: the move adds it as a learner and waits
	target := []int32{ghost}
	for _, b := range spec.Replicas[0] {
		if b != lag.NodeID() {
			target = append(target, b)
		}
	}
	if _, err := lead.catalog.Alter(topic, func(e *membership.TopicEntry) error {
		e.Replicas[0] = slices.Clone(target)
		e.Moves = []membership.PartitionMove{{Partition: 0, Target: slices.Clone(target)}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 30*time.Second, func() error {
		s, ok := lag.catalog.Topic(topic)
		if !ok || !slices.Equal(s.Replicas[0], target) {
			return errors.New("the catalog change has not reached the lagging voter")
		}
		return nil
	})
	for end := time.Now().Add(moves.NotVotingGrace + 3*time.Second); time.Now().Before(end); {
		if lag.parts.Get(topic, 0) == nil {
			t.Fatalf("node %d, a voter out of the ISR, closed its replica on the catalog's word", lag.NodeID())
		}
		time.Sleep(50 * time.Millisecond) // watching for a close that must not happen
	}
	if err := outOfISR(); err != nil {
		t.Fatalf("the voter came back into the ISR: the test proved nothing: %v", err)
	}
	conf, _ := lead.parts.Get(topic, 0).Replica.Conf()
	if !slices.Contains(conf.Voters, lag.NodeID()) {
		t.Fatalf("leader's configuration %+v no longer names %d", conf, lag.NodeID())
	}
}

// A leader the catalog no longer names (a lost move) while its group
// still counts it: every node answers with it as the leader, and it hands
// leadership to a voter the catalog names once one is caught up.
func TestReassignLeaderOutsideTheCatalog(t *testing.T) {
	nodes := startCluster(t, 4)
	const topic = "leader-outside"
	spec := startReplicatedTopic(t, nodes, topic, 1, 3)
	h := startAckedHistory(t, nodes, topic)
	defer h.finish(t)
	h.waitMore(t, 5)
	var lead, lag, outside *Node
	retry.Run(t, 20*time.Second, func() error {
		var err error
		lead, err = partitionLeader(nodes, topic, 0)
		return err
	})
	for _, n := range nodes {
		switch {
		case !slices.Contains(spec.Replicas[0], n.NodeID()):
			outside = n
		case n != lead && lag == nil:
			lag = n
		}
	}
	// The one voter the catalog will name lags: nobody to hand over to.
	lag.repl.Driver().SetTransport(mutedTransport{})
	target := []int32{98, 99, lag.NodeID()} // never started: the move waits
	if _, err := lead.catalog.Alter(topic, func(e *membership.TopicEntry) error {
		e.Replicas[0] = slices.Clone(target)
		e.Moves = []membership.PartitionMove{{Partition: 0, Target: slices.Clone(target)}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	live := map[int32]bool{}
	for _, n := range nodes {
		live[n.NodeID()] = true
	}
	retry.Run(t, 30*time.Second, func() error {
		s, ok := outside.catalog.Topic(topic)
		if !ok || !slices.Equal(s.Replicas[0], target) {
			return errors.New("the catalog change has not reached the node outside")
		}
		if l, err := partitionLeader(nodes, topic, 0); err != nil || l != lead {
			t.Fatalf("leadership moved before the voter the catalog names caught up: %v %v", l, err)
		}
		st := outside.leaders.Of(s, 0, func(id int32) bool { return live[id] })
		return retry.Check(st.Leader == lead.NodeID(), "node %d answers leader %d, the leader is %d", outside.NodeID(), st.Leader, lead.NodeID())
	})
	h.waitMore(t, 5)

	lag.repl.Driver().SetTransport(lag.repl.Transport())
	retry.Run(t, 60*time.Second, func() error {
		l, err := partitionLeader(nodes, topic, 0)
		if err != nil {
			return err
		}
		return retry.Check(l == lag, "node %d leads, want %d, the voter the catalog names", l.NodeID(), lag.NodeID())
	})
	h.waitMore(t, 5)
}

// A replica whose disk was replaced comes back while a move of its
// partition is under way: it starts from the replica list the group began
// the move with, never from the move's target, which the group does not
// have (a replica first in it would campaign at once with voters that are
// not the group's); the leader's entries then bring it the group's
// configuration, and writes go on.
func TestReassignEmptyReplicaDuringAMove(t *testing.T) {
	nodes := startCluster(t, 4)
	const topic = "empty-during-move"
	spec := startReplicatedTopic(t, nodes, topic, 1, 3)
	cur := spec.Replicas[0]
	h := startAckedHistory(t, nodes, topic)
	h.waitMore(t, 10)
	lead, err := partitionLeader(nodes, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	var wiped, add *Node
	var stay []int32
	for _, n := range nodes {
		switch {
		case !slices.Contains(cur, n.NodeID()):
			add = n
		case n != lead && wiped == nil:
			wiped = n
		}
	}
	for _, b := range cur {
		if b != wiped.NodeID() {
			stay = append(stay, b)
		}
	}
	// The move adds a broker that is down: it waits at the learner.
	stopNode(t, add)
	target := []int32{wiped.NodeID(), stay[0], add.NodeID()}
	retry.Run(t, 30*time.Second, func() error {
		var req kadm.AlterPartitionAssignmentsReq
		req.Assign(topic, 0, target)
		rs, err := newAdmin(t, lead).AlterPartitionAssignments(testCtx(t), req)
		if err == nil {
			err = rs.Error()
		}
		return err
	})
	retry.Run(t, 30*time.Second, func() error {
		l, err := partitionLeader(nodes, topic, 0)
		if err != nil {
			return err
		}
		c, _ := l.parts.Get(topic, 0).Replica.Conf()
		return retry.Check(slices.Contains(c.Learners, add.NodeID()), "configuration %+v", c)
	})

	stopNode(t, wiped)
	cfg := wiped.cfg
	cfg.DataDir = t.TempDir()
	cfg.Gossip.Join = []string{lead.Membership().Local().GossipAddr}
	wiped = startNode(t, cfg)
	want := sorted(cur)
	retry.Run(t, 30*time.Second, func() error {
		p := wiped.parts.Get(topic, 0)
		if p == nil {
			return errors.New("not open")
		}
		c, _ := p.Replica.Conf()
		if sameSet(c.Voters, target) {
			t.Fatalf("node %d started the group from the move's target: %+v", wiped.NodeID(), c)
		}
		return retry.Check(slices.Equal(c.Voters, want), "configuration %+v", c)
	})
	h.waitMore(t, 10)
	h.finish(t)
}

// Moves recorded right after a topic is created, before its replicas
// opened (an operator's script, or auto-rebalancing a new topic): each
// replica the list names still starts the group, so a leader is elected to
// carry the move out. Before, every replica of such a partition joined,
// waiting for a leader none of them could become.
func TestReassignMoveRecordedBeforeTheReplicasOpen(t *testing.T) {
	nodes := startCluster(t, 4)
	const topic, partitions = "moved-at-birth", 6
	n := nodes[0]
	spec, err := n.catalog.Create(TopicSpec{Name: topic, Partitions: partitions, ReplicationFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	targets := map[int32][]int32{}
	for p := range int32(partitions) {
		cur := spec.Replicas[p]
		target := []int32{cur[1], cur[2]}
		for _, m := range nodes {
			if !slices.Contains(cur, m.NodeID()) {
				target = append(target, m.NodeID())
			}
		}
		if _, err := n.catalog.Alter(topic, n.agent.SetMove(p, target)); err != nil {
			t.Fatal(err)
		}
		targets[p] = target
	}
	retry.Run(t, 60*time.Second, func() error {
		for p, target := range targets {
			for _, m := range nodes {
				s, ok := m.catalog.Topic(topic)
				if !ok {
					return fmt.Errorf("node %d: no topic", m.NodeID())
				}
				if _, moving := s.Moves[p]; moving || !slices.Equal(s.Replicas[p], target) {
					return fmt.Errorf("node %d: partition %d has replicas %v (moving: %v), want %v", m.NodeID(), p, s.Replicas[p], moving, target)
				}
			}
			if _, err := partitionLeader(nodes, topic, p); err != nil {
				return err
			}
		}
		return nil
	})
}
