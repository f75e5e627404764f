package node

import (
	"bytes"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/replica/transport"
)

// A cluster with a gossip key: the Raft port refuses a dialler without it
// and takes one with it, bound to the cluster id the nodes settled on; a
// rotation through the agent (what `spool gossip-key` asks) moves the
// transport to the new key while acks=all produce goes on.
func TestReplicationAuthenticatesWithTheGossipKey(t *testing.T) {
	old, next := bytes.Repeat([]byte{7}, 32), bytes.Repeat([]byte{9}, 32)
	nodes := startClusterWith(t, 3, func(c *Config) { c.Gossip.Key = old })
	const topic = "keyed"
	startReplicatedTopic(t, nodes, topic, 1, 3)
	cid := nodes[0].Membership().ClusterID()
	shake := func(keys ...[]byte) error {
		conn, err := net.Dial("tcp", nodes[0].repl.Transport().Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		d := transport.Dialler{From: replica.RaftID(2), To: replica.RaftID(1), ClusterID: cid, Keys: keys}
		return d.Handshake(conn, 5*time.Second)
	}
	if err := shake(); err == nil || !strings.Contains(err.Error(), "requires authentication") {
		t.Fatalf("no key: %v", err)
	}
	if err := shake(old); err != nil {
		t.Fatalf("the cluster's key: %v", err)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(seedsOf(nodes)...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testCtx(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	acked := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(recordValue(i))}).FirstErr(); err != nil {
				t.Errorf("produce %d: %v", i, err)
				return
			}
			acked++
		}
	}()
	// Handshakes after each step, as a reconnecting peer at the same
	// step would make them.
	for _, step := range []struct {
		op   membership.KeyOp
		peer [][]byte
	}{{membership.KeyInstall, [][]byte{old, next}}, {membership.KeyUse, [][]byte{next, old}}} {
		if _, err := nodes[1].Membership().ChangeGossipKey(step.op, next); err != nil {
			t.Fatalf("%s: %v", step.op, err)
		}
		if err := shake(step.peer...); err != nil {
			t.Fatalf("after %s: %v", step.op, err)
		}
	}
	if _, err := nodes[1].Membership().ChangeGossipKey(membership.KeyRemove, old); err != nil {
		t.Fatal(err)
	}
	if err := shake(old); err == nil {
		t.Fatal("the removed key still opens the Raft port")
	}
	if err := shake(next); err != nil {
		t.Fatalf("the new key: %v", err)
	}
	close(stop)
	wg.Wait()
	if acked == 0 {
		t.Fatal("nothing acknowledged during the rotation")
	}
	t.Logf("%d records acknowledged during the rotation", acked)
}
