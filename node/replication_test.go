package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
)

// startReplicatedTopic creates topic with partitions partitions of
// replication factor rf on nodes and waits until every partition is open
// on every replica and one of them leads it (takes appends).
func startReplicatedTopic(t *testing.T, nodes []*Node, topic string, partitions int32, rf int16) TopicSpec {
	t.Helper()
	r, err := newAdmin(t, nodes[0]).CreateTopic(testCtx(t), partitions, rf, nil, topic)
	if err != nil || r.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, r.Err)
	}
	spec := waitTopic(t, nodes, topic)
	for p := range spec.Partitions {
		retry.Run(t, 30*time.Second, func() error {
			_, err := partitionLeader(nodes, topic, p)
			return err
		})
	}
	return spec
}

// partitionLeader is the node whose replica of topic/p takes appends.
func partitionLeader(nodes []*Node, topic string, p int32) (*Node, error) {
	for _, n := range nodes {
		if n.isClosing() {
			continue
		}
		lp := n.parts.Get(topic, p)
		if lp == nil {
			continue
		}
		if _, ok := lp.Replica.WritableEpoch(); ok {
			return n, nil
		}
	}
	return nil, fmt.Errorf("no leader of %s-%d", topic, p)
}

func seedsOf(nodes []*Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.KafkaAddr())
	}
	return out
}

// TestReplicatedPartitionSurvivesItsLeader: three nodes, a topic of
// replication factor 3, acks=all produce with franz-go (idempotent, its
// default retries); the leader's node stops, another replica is elected,
// produce goes on, and every acknowledged record is read back at the
// offset it was acknowledged at, once.
func TestReplicatedPartitionSurvivesItsLeader(t *testing.T) {
	nodes := startCluster(t, 3)
	const topic = "replicated"
	spec := startReplicatedTopic(t, nodes, topic, 1, 3)
	if len(spec.Replicas[0]) != 3 {
		t.Fatalf("replicas %v, want 3", spec.Replicas[0])
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedsOf(nodes)...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.RetryTimeout(30*time.Second), kgo.ProduceRequestTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testCtx(t)
	acked := map[string]int64{}
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			r := &kgo.Record{Key: []byte(recordKey(i)), Value: []byte(recordValue(i))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
			acked[recordKey(i)] = r.Offset
		}
	}
	produce(0, 50)

	lead, err := partitionLeader(nodes, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	oldEpoch := lead.parts.Get(topic, 0).Replica.LeaderEpoch()
	// Every replica holds the committed records and reports the leader.
	retry.Run(t, 20*time.Second, func() error {
		hw := lead.parts.Get(topic, 0).Replica.HighWatermark()
		for _, n := range nodes {
			r := n.parts.Get(topic, 0).Replica
			if r.HighWatermark() != hw || r.Leader() != lead.NodeID() {
				return fmt.Errorf("node %d: high watermark %d leader %d, leader %d has %d", n.NodeID(), r.HighWatermark(), r.Leader(), lead.NodeID(), hw)
			}
		}
		if isr := lead.parts.Get(topic, 0).Replica.ISR(); len(isr) != 3 {
			return fmt.Errorf("ISR %v", isr)
		}
		return nil
	})
	// The leader knows the ISR; a follower reports the leader alone
	// (spreading leadership and ISR to every node is the leadership
	// table's work).
	m := metadataOf(t, lead, topic)
	if p := m.Topics[0].Partitions[0]; p.Leader != lead.NodeID() || p.LeaderEpoch != oldEpoch || len(p.ISR) != 3 {
		t.Errorf("metadata: leader %d epoch %d ISR %v, want %d %d and three", p.Leader, p.LeaderEpoch, p.ISR, lead.NodeID(), oldEpoch)
	}

	stopNode(t, lead)
	var rest []*Node
	for _, n := range nodes {
		if n != lead {
			rest = append(rest, n)
		}
	}
	var next *Node
	retry.Run(t, 30*time.Second, func() error {
		next, err = partitionLeader(rest, topic, 0)
		return err
	})
	if ep := next.parts.Get(topic, 0).Replica.LeaderEpoch(); ep <= oldEpoch {
		t.Errorf("new leader %d in epoch %d, not above %d", next.NodeID(), ep, oldEpoch)
	}
	produce(50, 100)

	// Read back from a survivor: each acked record at its offset, once.
	cons, err := kgo.NewClient(kgo.SeedBrokers(seedsOf(rest)...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]int64{}
	for len(seen) < len(acked) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d acked records: %v", len(seen), len(acked), ctx.Err())
		}
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.Canceled) {
				t.Logf("fetch: %v", e.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			k := string(r.Key)
			if prev, dup := seen[k]; dup {
				t.Errorf("record %s read at %d and %d", k, prev, r.Offset)
			}
			seen[k] = r.Offset
			if want, ok := acked[k]; !ok || want != r.Offset {
				t.Errorf("record %s at offset %d, acked at %d (acked: %v)", k, r.Offset, want, ok)
			}
		})
	}
}

// TestReplicatedProduceChecks: --default-replication-factor applies to a
// topic created without one; min.insync.replicas above the replicas in
// sync is NOT_ENOUGH_REPLICAS for acks=all; a follower refuses with
// NOT_LEADER_OR_FOLLOWER; a replication factor above the live brokers is
// INVALID_REPLICATION_FACTOR.
func TestReplicatedProduceChecks(t *testing.T) {
	nodes := startClusterWith(t, 3, func(c *Config) { c.DefaultReplicationFactor = 3 })
	adm := newAdmin(t, nodes[0])
	if r, err := adm.CreateTopic(testCtx(t), 1, 4, nil, "toomany"); err == nil && !errors.Is(r.Err, kerr.InvalidReplicationFactor) {
		t.Errorf("replication factor 4 on 3 brokers: %v, want INVALID_REPLICATION_FACTOR", r.Err)
	}
	four := "4"
	// No replication factor given (-1): the broker's default, 3.
	r, err := adm.CreateTopic(testCtx(t), 1, -1, map[string]*string{"min.insync.replicas": &four}, "strict")
	if err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	spec := waitTopic(t, nodes, "strict")
	if spec.ReplicationFactor != 3 || len(spec.Replicas[0]) != 3 {
		t.Fatalf("created with the default replication factor: %d, replicas %v; want 3", spec.ReplicationFactor, spec.Replicas[0])
	}
	// Settled: the preferred replica leads (leadership goes back to it)
	// and every replica knows.
	var lead *Node
	retry.Run(t, 30*time.Second, func() error {
		if lead, err = partitionLeader(nodes, "strict", 0); err != nil {
			return err
		}
		if lead.NodeID() != spec.Replicas[0][0] {
			return fmt.Errorf("leader %d, preferred %d", lead.NodeID(), spec.Replicas[0][0])
		}
		for _, n := range nodes {
			p := n.parts.Get("strict", 0)
			if p == nil { // the topic is known, the partition not yet open
				return fmt.Errorf("node %d has not opened strict-0 yet", n.NodeID())
			}
			if l := p.Replica.Leader(); l != lead.NodeID() {
				return fmt.Errorf("node %d sees leader %d", n.NodeID(), l)
			}
		}
		return nil
	})
	produceTo := func(n *Node, acks int16) int16 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = acks, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "strict"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = rawBatch(-1, -1, -1, time.Now().UnixMilli(), "v")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		// kgo stamps its own acks setting on every produce request.
		ack := kgo.AllISRAcks()
		if acks == 1 {
			ack = kgo.LeaderAck()
		}
		resp := rawRequest[*kmsg.ProduceResponse](t, newClient(t, n, kgo.RequiredAcks(ack), kgo.DisableIdempotentWrite()), req)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := produceTo(lead, -1); code != kerr.NotEnoughReplicas.Code {
		t.Errorf("acks=all with min.insync.replicas 4 of 3: error %d, want NOT_ENOUGH_REPLICAS", code)
	}
	if code := produceTo(lead, 1); code != 0 {
		t.Errorf("acks=1 with min.insync.replicas 4: error %d, want none", code)
	}
	for _, n := range nodes {
		if n != lead && !slices.Contains([]int16{kerr.NotLeaderForPartition.Code}, produceTo(n, 1)) {
			t.Errorf("produce to follower %d not refused with NOT_LEADER_OR_FOLLOWER", n.NodeID())
		}
	}
}

// TestReplicatedRetryAfterFailoverIsNotDuplicated: an idempotent
// producer's batch acknowledged by one leader and retried on the next one
// after a failover answers with its first offset, not a second copy: the
// new leader rebuilt producer state from the committed log.
func TestReplicatedRetryAfterFailoverIsNotDuplicated(t *testing.T) {
	nodes := startCluster(t, 3)
	const topic = "idempotent"
	startReplicatedTopic(t, nodes, topic, 1, 3)
	lead, err := partitionLeader(nodes, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	first := rawBatch(4242, 0, 0, now, "a", "b")
	r1 := produceRaw(t, newClient(t, lead), topic, first)
	if r1.ErrorCode != 0 {
		t.Fatalf("first produce: error %d", r1.ErrorCode)
	}
	stopNode(t, lead)
	var rest []*Node
	for _, n := range nodes {
		if n != lead {
			rest = append(rest, n)
		}
	}
	var next *Node
	retry.Run(t, 30*time.Second, func() error {
		next, err = partitionLeader(rest, topic, 0)
		return err
	})
	cl := newClient(t, next)
	if r := produceRaw(t, cl, topic, first); r.ErrorCode != 0 || r.BaseOffset != r1.BaseOffset {
		t.Errorf("retry on the new leader %d: error %d offset %d, want the first offset %d", next.NodeID(), r.ErrorCode, r.BaseOffset, r1.BaseOffset)
	}
	if r := produceRaw(t, cl, topic, rawBatch(4242, 0, 2, now, "c")); r.ErrorCode != 0 || r.BaseOffset <= r1.BaseOffset+1 {
		t.Errorf("next batch on the new leader: error %d offset %d, after %d", r.ErrorCode, r.BaseOffset, r1.BaseOffset)
	}
	if r := produceRaw(t, cl, topic, rawBatch(4242, 0, 9, now, "gap")); r.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Errorf("a sequence gap on the new leader: error %d, want OUT_OF_ORDER_SEQUENCE_NUMBER", r.ErrorCode)
	}
}

// startClusterWith is startCluster with each node's config adjusted.
func startClusterWith(t *testing.T, size int, adjust func(*Config)) []*Node {
	t.Helper()
	var nodes []*Node
	for id := 1; id <= size; id++ {
		cfg := testConfig(t, t.TempDir())
		cfg.NodeID = int32(id)
		if id > 1 {
			cfg.Gossip.Join = []string{nodes[0].Membership().Local().GossipAddr}
		}
		adjust(&cfg)
		nodes = append(nodes, startNode(t, cfg))
	}
	waitMembers(t, nodes, size)
	return nodes
}

// TestReplicatedGroupOffsetsSurviveLeadershipRoundTrip: a group's offsets
// partition (replicated) moves from A to B, B's coordinator commits, and
// leadership comes back to A: A must coordinate with B's commit, not with
// what it had loaded before (it replays in the new leader epoch).
func TestReplicatedGroupOffsetsSurviveLeadershipRoundTrip(t *testing.T) {
	nodes := startClusterWith(t, 3, func(c *Config) {
		c.Groups.OffsetsTopicPartitions = 3
		c.Raft.PreferredCheckTicks = 1 << 30 // leadership moves only when the test says
	})
	const topic = "orders"
	startReplicatedTopic(t, nodes, topic, 1, 3)
	adm := kadm.NewClient(newClient(t, nodes[0], kgo.SeedBrokers(seedsOf(nodes)...)))
	commit := func(adm *kadm.Client, at int64) {
		t.Helper()
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: topic, Partition: 0, At: at, LeaderEpoch: -1})
		retry.Run(t, 30*time.Second, func() error {
			r, err := adm.CommitOffsets(testCtx(t), "g", os)
			if err != nil {
				return err
			}
			return r.Error()
		})
	}
	fetched := func(adm *kadm.Client) int64 {
		t.Helper()
		var at int64
		retry.Run(t, 30*time.Second, func() error {
			r, err := adm.FetchOffsets(testCtx(t), "g")
			if err != nil {
				return err
			}
			o, ok := r.Lookup(topic, 0)
			if !ok {
				return errors.New("no offset")
			}
			at = o.At
			return o.Err
		})
		return at
	}
	commit(adm, 5)
	coord, err := nodes[0].coords.Groups.Get()
	if err != nil {
		t.Fatal(err)
	}
	p := coord.Partition("g")
	offsets := "__consumer_offsets"
	a, err := partitionLeader(nodes, offsets, p)
	if err != nil {
		t.Fatal(err)
	}
	if got := fetched(adm); got != 5 {
		t.Fatalf("fetched %d, committed 5", got)
	}
	var b *Node
	for _, n := range nodes {
		if n != a {
			b = n
			break
		}
	}
	moveTo := func(from, to *Node) {
		t.Helper()
		from.parts.Get(offsets, p).Replica.TransferLeadership(to.NodeID())
		retry.Run(t, 30*time.Second, func() error {
			if l, err := partitionLeader(nodes, offsets, p); err != nil || l != to {
				return fmt.Errorf("offsets partition %d not led by %d yet (%v)", p, to.NodeID(), err)
			}
			return nil
		})
	}
	moveTo(a, b)
	// Through B only: A hears nothing of the group while B leads (a
	// request reaching A as a follower would unload it there).
	bAdm := kadm.NewClient(newClient(t, b))
	commit(bAdm, 10)
	if got := fetched(bAdm); got != 10 {
		t.Fatalf("fetched %d from %d, committed 10", got, b.NodeID())
	}
	moveTo(b, a)
	if got := fetched(adm); got != 10 {
		t.Errorf("after leadership came back to %d: fetched %d, committed 10 on %d", a.NodeID(), got, b.NodeID())
	}
}

// TestFindCoordinatorFollowsAMovedLeaderFromAnyNode: a node that does not
// host a group's offsets partition names the partition's current Raft
// leader as coordinator (from the leadership table), not the preferred
// replica, once leadership moved.
func TestFindCoordinatorFollowsAMovedLeaderFromAnyNode(t *testing.T) {
	nodes := startClusterWith(t, 4, func(c *Config) {
		c.Groups.OffsetsTopicPartitions = 1
		c.Raft.PreferredCheckTicks = 1 << 30 // leadership moves only when the test says
	})
	findOn := func(n *Node) (int32, int16) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = "g"            // up to v3
		req.CoordinatorKeys = []string{"g"} // v4+
		resp := rawRequest[*kmsg.FindCoordinatorResponse](t, newClient(t, n), req)
		if len(resp.Coordinators) == 1 {
			return resp.Coordinators[0].NodeID, resp.Coordinators[0].ErrorCode
		}
		return resp.NodeID, resp.ErrorCode
	}
	retry.Run(t, 30*time.Second, func() error {
		if _, code := findOn(nodes[0]); code != 0 {
			return fmt.Errorf("find coordinator: error %d", code)
		}
		return nil
	})
	spec := waitTopic(t, nodes, "__consumer_offsets")
	replicas := spec.Replicas[0]
	var outsider *Node
	for _, n := range nodes {
		if !slices.Contains(replicas, n.NodeID()) {
			outsider = n
		}
	}
	var lead *Node
	retry.Run(t, 30*time.Second, func() (err error) {
		lead, err = partitionLeader(nodes, "__consumer_offsets", 0)
		return err
	})
	var to int32 = -1
	for _, id := range replicas {
		if id != lead.NodeID() && id != replicas[0] {
			to = id
			break
		}
	}
	lead.parts.Get("__consumer_offsets", 0).Replica.TransferLeadership(to)
	retry.Run(t, 30*time.Second, func() error {
		if l, err := partitionLeader(nodes, "__consumer_offsets", 0); err != nil || l.NodeID() != to {
			return fmt.Errorf("not led by %d yet (%v)", to, err)
		}
		return nil
	})
	retry.Run(t, 30*time.Second, func() error {
		if id, code := findOn(outsider); code != 0 || id != to {
			return fmt.Errorf("node %d (not a replica of %v) names coordinator %d (error %d), the leader is %d", outsider.NodeID(), replicas, id, code, to)
		}
		return nil
	})
}
