package node

// Replication over a mutual-TLS Raft transport between real nodes.

import (
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/internal/testcerts"
	"github.com/spool-log/spool/node/tlsfiles"
)

// TestRaftTLSReplicatedProduce: three nodes whose Raft transport is
// mutual TLS (certificates of one CA) commit acks=all produce to a
// replication-factor-3 topic, every replica reaching the leader's high
// watermark with no connection refused; the Raft port serves TLS only to
// a client certificate of that CA.
func TestRaftTLSReplicatedProduce(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "raft-ca")
	caFile := ca.WriteCA(t, dir, "raft-ca")
	id := 0
	nodes := startClusterWith(t, 3, func(c *Config) {
		id++
		cert, key := ca.ServerAndClient(t, fmt.Sprintf("spool-%d", id)).Write(t, dir, fmt.Sprintf("raft-%d", id))
		c.RaftTLS = tlsfiles.Files{CertFile: cert, KeyFile: key, ClientCAFile: caFile}
		c.TLSReloadInterval = 0
	})
	const topic = "raft-tls"
	startReplicatedTopic(t, nodes, topic, 1, 3)
	cl := newClient(t, nodes[0], kgo.SeedBrokers(seedsOf(nodes)...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.RetryTimeout(30*time.Second))
	for i := range 20 {
		if err := cl.ProduceSync(testCtx(t), &kgo.Record{Key: []byte(recordKey(i)), Value: []byte(recordValue(i))}).FirstErr(); err != nil {
			t.Fatalf("acks=all produce %d over raft TLS: %v", i, err)
		}
	}
	lead, err := partitionLeader(nodes, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 20*time.Second, func() error {
		hw := lead.parts.Get(topic, 0).Replica.HighWatermark()
		if hw != 20 {
			return fmt.Errorf("leader high watermark %d, want 20", hw)
		}
		for _, n := range nodes {
			if got := n.parts.Get(topic, 0).Replica.HighWatermark(); got != hw {
				return fmt.Errorf("node %d high watermark %d, want %d", n.NodeID(), got, hw)
			}
		}
		return nil
	})
	for _, n := range nodes {
		if r := n.repl.Transport().Stats().Refused; r != 0 {
			t.Errorf("node %d refused %d raft connections from its peers", n.NodeID(), r)
		}
	}
	if got := len(consumeAll(t, nodes[1], topic, 20)); got != 20 {
		t.Fatalf("consumed %d records, want 20", got)
	}

	addr := nodes[0].repl.Transport().Addr().String()
	conn, err := tls.Dial("tcp", addr, testcerts.ClientConfig(ca, ca.Client(t, "probe").TLS(t)))
	if err != nil {
		t.Fatalf("TLS to the raft port with a certificate of its CA: %v", err)
	}
	if v := conn.ConnectionState().Version; v < tls.VersionTLS12 {
		t.Errorf("raft TLS version %x, want 1.2 or later", v)
	}
	conn.Close()
	other := testcerts.NewCA(t, "other-ca")
	before := nodes[0].repl.Transport().Stats().Refused
	if conn, err := tls.Dial("tcp", addr, testcerts.ClientConfig(ca, other.Client(t, "stranger").TLS(t))); err == nil {
		// TLS 1.3: the server's verdict on the client certificate comes
		// with the first read.
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Read(make([]byte, 1)); err == nil {
			t.Error("a certificate of another CA was served on the raft port")
		}
		conn.Close()
	}
	retry.Run(t, 10*time.Second, func() error {
		if nodes[0].repl.Transport().Stats().Refused == before {
			return fmt.Errorf("the stranger's connection was not counted as refused")
		}
		return nil
	})
}
