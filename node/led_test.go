package node

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

// Raft's amnesia: a replica whose disk was replaced has forgotten its log
// and its votes. Were it to start the group afresh with a vote, it and a
// lagging peer would be a majority that elects the peer, which would then
// overwrite what the replica and the leader had committed. Here: b misses
// acknowledged records while down, a's disk is replaced, and the leader is
// cut off (its Raft messages dropped). The catalog records that the
// partition has had a leader, so a rejoins without a vote: nobody can be
// elected until the leader is heard again, and then every acknowledged
// record is read back.
func TestWipedReplicaRejoinsWithoutAVote(t *testing.T) {
	nodes := startCluster(t, 3)
	const topic = "amnesia"
	startReplicatedTopic(t, nodes, topic, 1, 3)
	retry.Run(t, 30*time.Second, func() error {
		for _, n := range nodes {
			if e, ok := n.agent.Topic(topic); !ok || !e.HasLed(0) {
				return fmt.Errorf("node %d: partition 0 not marked led: %+v", n.NodeID(), e.Led)
			}
		}
		return nil
	})
	lead, err := partitionLeader(nodes, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	var a, b *Node
	for _, n := range nodes {
		switch {
		case n == lead:
		case a == nil:
			a = n
		default:
			b = n
		}
	}
	stopNode(t, b)
	h := startAckedHistory(t, []*Node{lead, a}, topic)
	h.waitMore(t, 30)
	keys, offs := h.finish(t)

	stopNode(t, a)
	lead.repl.Driver().SetTransport(mutedTransport{})
	join := []string{lead.Membership().Local().GossipAddr}
	cfgB := b.cfg
	cfgB.Gossip.Join = join
	b = startNode(t, cfgB)
	cfgA := a.cfg
	cfgA.DataDir = t.TempDir()
	cfgA.Gossip.Join = join
	a = startNode(t, cfgA)
	retry.Run(t, 30*time.Second, func() error {
		p := a.parts.Get(topic, 0)
		if p == nil {
			return errors.New("replica not open on the wiped node")
		}
		if c, _ := p.Replica.Conf(); len(c.Voters) > 0 {
			t.Fatalf("the wiped replica started the group as a voter: %+v", c)
		}
		return nil
	})
	// Several election timeouts: b campaigns, and must find no majority.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); <-tick.C {
		if l, err := partitionLeader([]*Node{a, b}, topic, 0); err == nil {
			t.Fatalf("node %d was elected without the leader's log", l.NodeID())
		}
	}

	lead.repl.Driver().SetTransport(lead.repl.Transport())
	all := []*Node{lead, a, b}
	retry.Run(t, 60*time.Second, func() error {
		_, err := partitionLeader(all, topic, 0)
		return err
	})
	checkReadBack(t, all, topic, keys, offs)
	retry.Run(t, 30*time.Second, func() error {
		c, _ := a.parts.Get(topic, 0).Replica.Conf()
		return retry.Check(len(c.Voters) == 3, "the wiped replica's configuration %+v", c)
	})
}
