package integration

// The Raft port of a cluster with a gossip keyring (issue 26): strangers
// are refused whatever broker they claim to be, a peer of another cluster
// is refused even with the key, a silent connection is dropped without
// keeping peers out, and a key rotation through `spool gossip-key` keeps
// replication going under an acks=all load whose every acknowledged
// record reads back.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/replica/transport"
)

func newGossipKey(t testing.TB) (string, []byte) {
	t.Helper()
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(raw), raw
}

// clusterIDOf is the cluster id n's Metadata reports.
func clusterIDOf(n *Node) (string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	raw, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return "", err
	}
	resp := raw.(*kmsg.MetadataResponse)
	if resp.ClusterID == nil {
		return "", errors.New("no cluster id")
	}
	return *resp.ClusterID, nil
}

// metricSum adds up the samples of a Prometheus metric on n whose labels
// contain label (e.g. `reason="no_key"`).
func metricSum(t testing.TB, n *Node, name, label string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + n.AdminAddr + "/metrics")
	if err != nil {
		t.Fatalf("metrics of node %d: %v", n.ID, err)
	}
	defer resp.Body.Close()
	total := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") || !strings.Contains(line, label) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			total += v
		}
	}
	return total
}

func TestRaftPortAuthentication(t *testing.T) {
	k1, raw1 := newGossipKey(t)
	k2, raw2 := newGossipKey(t)
	keys := t.TempDir()
	k1File, k2File := filepath.Join(keys, "k1"), filepath.Join(keys, "k2")
	for f, k := range map[string]string{k1File: k1, k2File: k2} {
		if err := os.WriteFile(f, []byte(k+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Each node keeps its keyring in its own file, which Serf rewrites at
	// each step of a rotation; a restart reads it back.
	var nodes []*Node
	raftAddr := map[int]string{}
	for id := 1; id <= 3; id++ {
		ring := filepath.Join(keys, fmt.Sprintf("keyring-%d.json", id))
		if err := os.WriteFile(ring, []byte(`["`+k1+`"]`), 0o600); err != nil {
			t.Fatal(err)
		}
		raftAddr[id] = freeAddr(t)
		opts := []NodeOption{WithID(id), withQuickGroups, WithArgs("--keyring-file", ring, "--raft-addr", raftAddr[id])}
		if id > 1 {
			opts = append(opts, WithJoin(nodes[0].GossipAddr))
		}
		nodes = append(nodes, StartNode(t, opts...))
	}
	for _, n := range nodes {
		waitMembers(t, n, 20*time.Second, func(ms map[int]member) error {
			return wantStatus(ms, 3, "alive", 1, 2, 3)
		})
		if strings.Contains(n.Logs(), "Raft port takes votes") {
			t.Fatalf("node %d warns its Raft port is open, with a keyring", n.ID)
		}
	}
	var cid string
	retry.Run(t, 30*time.Second, func() error {
		ids := map[string]bool{}
		for _, n := range nodes {
			id, err := clusterIDOf(n)
			if err != nil {
				return err
			}
			ids[id], cid = true, id
		}
		if len(ids) != 1 {
			return fmt.Errorf("cluster ids %v", ids)
		}
		return nil
	})
	r := startReplication(t, nodes)

	a := nodes[0]
	shake := func(id int, d transport.Dialler) error {
		conn, err := net.DialTimeout("tcp", raftAddr[id], 5*time.Second)
		if err != nil {
			t.Fatalf("dial node %d's Raft port: %v", id, err)
		}
		defer conn.Close()
		return d.Handshake(conn, 10*time.Second)
	}
	as2 := func(cluster string, keys ...[]byte) transport.Dialler {
		// On the wire a node is its Raft id, the broker id plus one.
		return transport.Dialler{From: replica.RaftID(2), To: replica.RaftID(1), ClusterID: cluster, Keys: keys}
	}
	// The control: the right key and cluster id pass, so each refusal
	// below is for what it lacks.
	if err := shake(1, as2(cid, raw1)); err != nil {
		t.Fatalf("the cluster's key and id as broker 2: %v", err)
	}
	for _, c := range []struct {
		name, want, reason string
		d                  transport.Dialler
	}{
		{"no key", "requires authentication", "no_key", as2(cid)},
		{"a wrong key", "did not prove", "bad_key", as2(cid, raw2)},
		{"another cluster's id, with the key", "another cluster", "wrong_cluster", as2("spool-other-cluster", raw1)},
	} {
		err := shake(1, c.d)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("stranger with %s as broker 2: %v, want %q", c.name, err, c.want)
		}
		t.Logf("stranger with %s: %v", c.name, err)
		retry.Run(t, 10*time.Second, func() error {
			if v := metricSum(t, a, "spool_replication_transport_refused", `reason="`+c.reason+`"`); v < 1 {
				return fmt.Errorf("refused{reason=%s} = %v", c.reason, v)
			}
			return nil
		})
	}
	if !strings.Contains(a.Logs(), "raft connection refused") || !strings.Contains(a.Logs(), "reason=bad_key") {
		t.Fatal("node 1 did not log the refusals with their reason")
	}
	// A stranger that connects and says nothing is dropped at the
	// handshake timeout, and a peer handshakes meanwhile.
	silent, err := net.Dial("tcp", raftAddr[1])
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if err := shake(1, as2(cid, raw1)); err != nil {
		t.Fatalf("peer beside a silent stranger: %v", err)
	}
	silent.SetReadDeadline(time.Now().Add(15 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err == nil || isNetTimeout(err) {
		t.Fatalf("silent stranger still connected: %v", err)
	}
	r.w.waitProgress(t, nil, replBatch, replStep, "after the strangers")

	// Rotate: install, use, remove, each cluster-wide, under load.
	for _, step := range []struct{ op, file string }{{"install", k2File}, {"use", k2File}, {"remove", k1File}} {
		out, err := Spool(t, "", "--admin", a.AdminAddr, "gossip-key", step.op, "--key-file", step.file)
		if err != nil {
			t.Fatalf("gossip-key %s: %v\n%s", step.op, err, out)
		}
		if !strings.Contains(out, "members 3, answered 3, errors 0") {
			t.Fatalf("gossip-key %s: %s", step.op, out)
		}
		r.w.waitProgress(t, nil, replBatch, replStep, "after gossip-key "+step.op)
	}
	out, err := Spool(t, "", "--admin", a.AdminAddr, "gossip-key", "list", "-o", "json")
	if err != nil || strings.Contains(out, k2) || strings.Count(out, `"fingerprint"`) != 1 || !strings.Contains(out, `"primary": 3`) {
		t.Fatalf("gossip-key list after the rotation (want one key, primary on 3, never shown): %v\n%s", err, out)
	}
	// The old key no longer opens the port; the new one does.
	if err := shake(1, as2(cid, raw1)); err == nil || !strings.Contains(err.Error(), "did not prove") {
		t.Fatalf("the removed key after the rotation: %v", err)
	}
	if err := shake(1, as2(cid, raw2)); err != nil {
		t.Fatalf("the new key after the rotation: %v", err)
	}

	// New connections use the new key: node 3 restarts from its rewritten
	// keyring, then node 2 stops, so every write needs nodes 1 and 3 to
	// replicate over connections made after the rotation.
	c := nodes[2]
	c.Stop()
	ring, err := os.ReadFile(filepath.Join(keys, "keyring-3.json"))
	if err != nil || strings.Contains(string(ring), k1) || !strings.Contains(string(ring), k2) {
		t.Fatalf("node 3's keyring file after the rotation: %v %s", err, ring)
	}
	c.Start()
	nodes[1].Stop()
	r.w.waitProgress(t, nil, replBatch, replStep, "node 2 stopped, node 3 restarted with the new key only")
	nodes[1].Start()
	r.w.waitProgress(t, nil, replBatch, replStep, "node 2 back")
	for _, n := range nodes {
		if v := metricSum(t, n, "spool_replication_transport_dial_refused", `reason="bad_key"`); v != 0 {
			t.Fatalf("node %d refused %v dialled peers for their key during the rotation", n.ID, v)
		}
		if n != a {
			if v := metricSum(t, n, "spool_replication_transport_refused", `reason="bad_key"`); v != 0 {
				t.Fatalf("node %d refused %v peers for their key during the rotation", n.ID, v)
			}
		}
	}
	r.finish(t, 1)
}

func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// A node with neither a gossip key nor Raft TLS says its Raft port is open.
func TestRaftPortOpenWarning(t *testing.T) {
	n := StartNode(t)
	if !strings.Contains(n.Logs(), "the Raft port takes votes, appends and snapshots from anyone who reaches it") {
		t.Fatalf("no warning that the Raft port is open:\n%s", n.Logs())
	}
}
