package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/cluster"
	"github.com/spool-log/spool/node/group"
	"github.com/spool-log/spool/node/hosted"
)

// startStrangers starts nodes 1..size that know each other's broker ids (a
// roster file, as nodes that met before keep) but do not gossip yet: each
// places topics as the cluster would, and none hears the others' creates.
// joinAll connects them.
func startStrangers(t *testing.T, size int) []*Node {
	t.Helper()
	var roster struct {
		Entries []membership.RosterEntry `json:"entries"`
	}
	for id := 1; id <= size; id++ {
		roster.Entries = append(roster.Entries, membership.RosterEntry{ID: int32(id), Gen: 1})
	}
	raw, err := json.Marshal(roster)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*Node
	for id := 1; id <= size; id++ {
		cfg := testConfig(t, t.TempDir())
		cfg.NodeID = int32(id)
		if err := os.MkdirAll(filepath.Join(cfg.DataDir, cluster.Dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cfg.DataDir, cluster.Dir, "roster.json"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, startNode(t, cfg))
	}
	return nodes
}

func joinAll(t *testing.T, nodes []*Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range nodes[1:] {
		if err := n.Membership().Join(ctx, nodes[0].Membership().Local().GossipAddr); err != nil {
			t.Fatalf("node %d join: %v", n.NodeID(), err)
		}
	}
	waitMembers(t, nodes, len(nodes))
	retry.Run(t, 20*time.Second, func() error {
		for _, n := range nodes[1:] {
			if n.agent.Digest() != nodes[0].agent.Digest() {
				return fmt.Errorf("node %d catalog differs from node 1's", n.NodeID())
			}
		}
		return nil
	})
}

// TestClusterConcurrentAutoCreateKeepsRecords: two nodes auto-create one
// topic before either hears of the other's create (Metadata on each), and
// records go to the partition's leader. Once gossip merges the creates, the
// records must still be there and served from either node.
func TestClusterConcurrentAutoCreateKeepsRecords(t *testing.T) {
	nodes := startStrangers(t, 2)
	// A name whose only partition (DefaultPartitions is 1) is led by node 1,
	// the lower origin, whose create lost every tie before ids were derived.
	var topic string
	for i := 0; topic == ""; i++ {
		name := fmt.Sprintf("auto-%d", i)
		if membership.PlaceTopic(name, 1, []int32{1, 2}, 1)[0][0] == 1 {
			topic = name
		}
	}
	var ids []TopicID
	for _, n := range nodes {
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = true
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp := rawRequest[*kmsg.MetadataResponse](t, newClient(t, n), req)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("node %d metadata: %+v", n.NodeID(), resp.Topics)
		}
		ids = append(ids, resp.Topics[0].TopicID)
	}
	if ids[0] != ids[1] {
		t.Errorf("the two auto-creates made topic ids %v and %v", ids[0], ids[1])
	}

	const records = 20
	cl := newClient(t, nodes[0], kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < records; i++ {
		r := kgo.StringRecord(recordValue(i))
		r.Partition = 0
		if err := cl.ProduceSync(testCtx(t), r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}

	joinAll(t, nodes)
	for _, n := range nodes {
		spec, ok := n.catalog.Topic(topic)
		if !ok || spec.ID != ids[0] {
			t.Fatalf("node %d converged on %+v, want id %v", n.NodeID(), spec, ids[0])
		}
	}
	if p := nodes[0].parts.Get(topic, 0); p == nil || p.Replica.LogEndOffset() != records {
		t.Fatalf("leader's partition after the merge: %v", p)
	}
	got := consumeAll(t, nodes[1], topic, records)
	if len(got) != records {
		t.Fatalf("consumed %d records through node 2, want %d", len(got), records)
	}
}

// TestClusterConcurrentOffsetsTopicIsOne: two coordinators create
// __consumer_offsets before hearing of each other; it must be one topic, so
// the merge reopens none of its partitions.
func TestClusterConcurrentOffsetsTopicIsOne(t *testing.T) {
	nodes := startStrangers(t, 2)
	var specs []TopicSpec
	for _, n := range nodes {
		if _, err := n.coords.Groups.Get(); err != nil {
			t.Fatalf("node %d coordinator: %v", n.NodeID(), err)
		}
		spec, ok := n.catalog.Topic(group.TopicName)
		if !ok {
			t.Fatalf("node %d has no %s", n.NodeID(), group.TopicName)
		}
		specs = append(specs, spec)
	}
	if specs[0].ID != specs[1].ID {
		t.Fatalf("%s created as %v and %v", group.TopicName, specs[0].ID, specs[1].ID)
	}
	before := map[*localPartition]bool{}
	for _, p := range nodes[0].parts.All() {
		before[p] = true
	}
	joinAll(t, nodes)
	for _, p := range nodes[0].parts.All() {
		if !before[p] {
			t.Fatalf("partition %s-%d was reopened by the merge", p.Topic, p.Index)
		}
	}
	if len(nodes[0].parts.All()) != len(before) {
		t.Fatalf("node 1 holds %d partitions after the merge, %d before", len(nodes[0].parts.All()), len(before))
	}
}

// TestClusterOneClusterID: every node of a cluster reports the same cluster
// id in Metadata, and a node that joins later adopts it.
func TestClusterOneClusterID(t *testing.T) {
	nodes := startCluster(t, 3)
	clusterIDs := func(nodes []*Node) func() error {
		return func() error {
			var want string
			for _, n := range nodes {
				resp := rawRequest[*kmsg.MetadataResponse](t, newClient(t, n), kmsg.NewPtrMetadataRequest())
				if resp.ClusterID == nil {
					return fmt.Errorf("node %d reports no cluster id", n.NodeID())
				}
				if want == "" {
					want = *resp.ClusterID
				}
				if *resp.ClusterID != want {
					return fmt.Errorf("node %d reports cluster id %q, node %d %q", n.NodeID(), *resp.ClusterID, nodes[0].NodeID(), want)
				}
			}
			return nil
		}
	}
	retry.Run(t, 20*time.Second, clusterIDs(nodes))
	before := nodes[0].cluster.ClusterID()

	cfg := testConfig(t, t.TempDir())
	cfg.NodeID = 4
	cfg.Gossip.Join = []string{nodes[2].Membership().Local().GossipAddr}
	late := startNode(t, cfg)
	all := append(nodes, late)
	waitMembers(t, all, 4)
	retry.Run(t, 20*time.Second, clusterIDs(all))
	if got := late.cluster.ClusterID(); got != before {
		t.Fatalf("the cluster's id changed from %q to %q when node 4 joined", before, got)
	}
}

// TestClusterStalePartitionDirRemoved: a node is down while its topic is
// deleted and created again elsewhere, and comes back already holding the
// new catalog (as a node that pulled it, or rebuilt a lost one, would). Its
// directories of the deleted incarnation must be set aside in the
// quarantine, not served as the new topic's.
func TestClusterStalePartitionDirRemoved(t *testing.T) {
	nodes := startCluster(t, 3)
	const topic, partitions = "phoenix", 6
	createTopic(t, newAdmin(t, nodes[0]), topic, partitions, nil)
	old := waitTopic(t, nodes, topic)
	down := nodes[2]
	var led []int32
	for p, rs := range old.Replicas {
		if rs[0] == down.NodeID() {
			led = append(led, int32(p))
		}
	}
	if len(led) == 0 {
		t.Fatalf("node %d leads no partition of %v", down.NodeID(), old.Replicas)
	}
	cl := newClient(t, nodes[0], kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, p := range led {
		r := kgo.StringRecord("from the deleted incarnation")
		r.Partition = p
		if err := cl.ProduceSync(testCtx(t), r).FirstErr(); err != nil {
			t.Fatalf("produce to %d: %v", p, err)
		}
	}
	stopNode(t, down)

	adm := newAdmin(t, nodes[0])
	if _, err := adm.DeleteTopics(testCtx(t), topic); err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 20*time.Second, func() error {
		for _, n := range nodes[:2] {
			if _, ok := n.catalog.Topic(topic); ok {
				return fmt.Errorf("node %d still has %s", n.NodeID(), topic)
			}
		}
		return nil
	})
	createTopic(t, adm, topic, partitions, nil)
	recreated := waitTopic(t, nodes[:2], topic)
	if recreated.ID == old.ID {
		t.Fatalf("re-created topic kept id %v", old.ID)
	}

	// The restarted node starts from a catalog that already knows the new
	// topic.
	catalog, err := os.ReadFile(filepath.Join(nodes[0].cfg.DataDir, cluster.Dir, "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(down.cfg.DataDir, cluster.Dir, "catalog.json"), catalog, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := down.cfg
	cfg.Gossip.Join = []string{nodes[0].Membership().Local().GossipAddr}
	back := startNode(t, cfg)
	for p, rs := range recreated.Replicas {
		if rs[0] != back.NodeID() {
			continue
		}
		lp := back.parts.Get(topic, int32(p))
		if lp == nil {
			t.Fatalf("partition %d of the new topic not open on its leader", p)
		}
		if end := lp.Replica.LogEndOffset(); end != 0 {
			t.Errorf("partition %d of the new topic holds %d records of the deleted one", p, end)
		}
		raw, err := os.ReadFile(filepath.Join(lp.Dir, hosted.TopicIDFile))
		if err != nil || string(bytes.TrimSpace(raw)) != recreated.ID.String() {
			t.Errorf("partition %d topic-id file %q (%v), want %v", p, raw, err, recreated.ID)
		}
	}
	if q, err := back.quarantine.List(); err != nil || len(q) != len(led) {
		t.Errorf("quarantine holds %+v (%v), want the %d directories of the deleted incarnation", q, err, len(led))
	}
}

// TestAdvertiseAdminAddr: the admin address peers pull anti-entropy state
// from is the configured one, not the (loopback) bound one.
func TestAdvertiseAdminAddr(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.Gossip.AdvertiseAdminAddr = "spool-7.test:9644"
	n := startNode(t, cfg)
	if got := n.Membership().Local().AdminAddr; got != "spool-7.test:9644" {
		t.Fatalf("admin tag %q, want the advertised spool-7.test:9644", got)
	}

	cfg = testConfig(t, t.TempDir())
	cfg.Gossip.AdvertiseAdminAddr = "no-port"
	bad, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Start(); err == nil || !strings.Contains(err.Error(), "advertised admin address") {
		t.Fatalf("start with a bad advertised admin address: %v", err)
	}
}
