package node

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/internal/testcerts"
	"github.com/spool-log/spool/node/tlsfiles"
)

// TestReplicatedCompactionCopiesTheCleanedLog: a compacted topic of
// replication factor 3 is cleaned on its replicas while one of them is
// down; when that node comes back, its replica is behind the leader's Raft
// log, so it gets the snapshot and copies the cleaned records over the
// admin listener, then holds the leader's bytes at the leader's offsets.
// The copy travels as the node's other pulls do: over HTTPS when the
// admin API is TLS.
func TestReplicatedCompactionCopiesTheCleanedLog(t *testing.T) {
	t.Run("http", func(t *testing.T) { testReplicatedCompactionCopy(t, nil) })
	t.Run("https", func(t *testing.T) {
		dir := t.TempDir()
		ca := testcerts.NewCA(t, "admin-ca")
		certFile, keyFile := ca.ServerAndClient(t, "spool-admin").Write(t, dir, "admin")
		files := tlsfiles.Files{CertFile: certFile, KeyFile: keyFile, ClientCAFile: ca.WriteCA(t, dir, "ca")}
		testReplicatedCompactionCopy(t, &files)
	})
}

func testReplicatedCompactionCopy(t *testing.T, adminTLS *tlsfiles.Files) {
	cfgs := map[int32]Config{}
	nodes := startClusterWith(t, 3, func(c *Config) {
		if adminTLS != nil {
			c.AdminTLS = *adminTLS
		}
		cfgs[c.NodeID] = *c
	})
	const topic = "replicated-compacted"
	r, err := newAdmin(t, nodes[0]).CreateTopic(testCtx(t), 1, 3, map[string]*string{
		"cleanup.policy": ptr("compact"), "segment.bytes": ptr("4096"),
	}, topic)
	if err != nil || r.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, r.Err)
	}
	waitTopic(t, nodes, topic)
	var lead *Node
	retry.Run(t, 30*time.Second, func() error {
		lead, err = partitionLeader(nodes, topic, 0)
		return err
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedsOf(nodes)...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testCtx(t)
	produce := func(from, to int) {
		t.Helper()
		var rs []*kgo.Record
		for i := from; i < to; i++ {
			rs = append(rs, &kgo.Record{Key: []byte(recordKey(i % 20)), Value: []byte(recordValue(i))})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce %d-%d: %v", from, to, err)
		}
	}
	produce(0, 100)
	var down *Node
	for _, n := range nodes {
		if n != lead {
			down = n
			break
		}
	}
	downCfg := cfgs[down.NodeID()]
	stopNode(t, down)
	for i := 100; i < 2000; i += 50 {
		produce(i, i+50)
	}
	for _, n := range nodes {
		if n == down {
			continue
		}
		p := n.parts.Get(topic, 0)
		before := p.Replica.Size()
		if err := p.Replica.Flush(); err != nil {
			t.Fatal(err)
		}
		// A leader holds its Raft log for a follower it heard from
		// lately, until an election timeout says it is gone.
		retry.Run(t, 20*time.Second, func() error {
			if n.cleaner.CleanLog(p); p.Replica.Size() >= before/2 {
				return fmt.Errorf("node %d: cleaning left %d of %d bytes", n.NodeID(), p.Replica.Size(), before)
			}
			return nil
		})
	}

	downCfg.Gossip.Join = []string{lead.Membership().Local().GossipAddr}
	back := startNode(t, downCfg)
	retry.Run(t, 60*time.Second, func() error {
		lp := lead.parts.Get(topic, 0)
		bp := back.parts.Get(topic, 0)
		if bp == nil {
			return fmt.Errorf("node %d has not opened its replica", back.NodeID())
		}
		if lp.Replica.HighWatermark() != bp.Replica.HighWatermark() {
			return fmt.Errorf("node %d at %d, the leader at %d", back.NodeID(), bp.Replica.HighWatermark(), lp.Replica.HighWatermark())
		}
		return nil
	})
	lb := replicaBytes(t, lead, topic)
	bb := replicaBytes(t, back, topic)
	if !bytes.Equal(lb, bb) {
		t.Fatalf("the returned replica holds %d bytes, the leader %d, or other bytes", len(bb), len(lb))
	}
	if size := back.parts.Get(topic, 0).Replica.Size(); size > 3*4096+int64(len(lb)) {
		t.Errorf("the returned replica holds %d bytes on disk", size)
	}
}

func ptr(s string) *string { return &s }

// replicaBytes is every committed batch of n's replica of topic/0.
func replicaBytes(t *testing.T, n *Node, topic string) []byte {
	t.Helper()
	r := n.parts.Get(topic, 0).Replica
	var out []byte
	for off := r.LogStartOffset(); off < r.HighWatermark(); {
		sl, err := r.Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if sl.Size() == 0 {
			sl.Release()
			break
		}
		for _, reg := range sl.Regions {
			b := make([]byte, reg.Length)
			if _, err := reg.File.ReadAt(b, reg.Position); err != nil {
				t.Fatal(err)
			}
			out = append(out, b...)
		}
		sl.Release()
		err = recordbatch.Walk(out, func(_ []byte, h recordbatch.Header) error {
			off = h.LastOffset() + 1
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}
