package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node/group"
)

// TestEvenReplicationFactorRefused: on 3 brokers, where a factor of 2
// could be placed, CreateTopics refuses it (asked for, or given by a
// manual assignment) with INVALID_REPLICATION_FACTOR and the reason, and
// a default of 4 gives 3. A topic of factor 2 already in the catalog (as a
// cluster of an earlier version made them) keeps serving, cannot grow or
// move, and is reported: the gauges at /metrics and a warning at start.
func TestEvenReplicationFactorRefused(t *testing.T) {
	nodes := startClusterWith(t, 3, func(c *Config) { c.DefaultReplicationFactor = 4 })
	cl := newClient(t, nodes[0])
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)

	r, _ := adm.CreateTopic(ctx, 1, 2, nil, "even") // the error is r.Err
	if !errors.Is(r.Err, kerr.InvalidReplicationFactor) {
		t.Fatalf("create with factor 2: %v, want INVALID_REPLICATION_FACTOR", r.Err)
	}
	for _, want := range []string{"replication factor 2 is even", "Raft group", "survives none"} {
		if !strings.Contains(r.ErrMessage, want) {
			t.Errorf("message %q does not say %q", r.ErrMessage, want)
		}
	}
	if r, _ := adm.ValidateCreateTopics(ctx, 1, 4, nil, "even4"); !errors.Is(r["even4"].Err, kerr.InvalidReplicationFactor) {
		t.Errorf("validate factor 4: %v, want INVALID_REPLICATION_FACTOR", r["even4"].Err)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "even-assigned", -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{1, 2}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req.Topics = append(req.Topics, rt)
	if resp := rawRequest[*kmsg.CreateTopicsResponse](t, cl, req); resp.Topics[0].ErrorCode != kerr.InvalidReplicationFactor.Code {
		t.Errorf("manual assignment of 2 replicas: %v, want INVALID_REPLICATION_FACTOR", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	for _, name := range []string{"even", "even4", "even-assigned"} {
		if _, ok := nodes[0].catalog.Topic(name); ok {
			t.Errorf("refused topic %s is in the catalog", name)
		}
	}
	if r, err := adm.CreateTopic(ctx, 1, -1, nil, "defaulted"); err != nil || r.Err != nil || r.ReplicationFactor != 3 {
		t.Fatalf("create with the default of 4: factor %d (%v %v), want 3", r.ReplicationFactor, err, r.Err)
	}

	// An even-factor topic from before: recorded in the catalog directly.
	if _, err := nodes[0].catalog.Create(TopicSpec{Name: "legacy", Partitions: 2, ReplicationFactor: 2}); err != nil {
		t.Fatal(err)
	}
	spec := waitTopic(t, nodes, "legacy")
	for p := range spec.Partitions {
		retry.Run(t, 30*time.Second, func() error {
			_, err := partitionLeader(nodes, "legacy", p)
			return err
		})
	}
	prod := newClient(t, nodes[0], kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range spec.Partitions {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "legacy", Partition: p, Value: []byte(fmt.Sprint("v", p))}).FirstErr(); err != nil {
			t.Fatalf("produce to legacy/%d: %v", p, err)
		}
	}
	if got := consumeAll(t, nodes[1], "legacy", 2); len(got) != 2 {
		t.Fatalf("consumed %d records of legacy, want 2", len(got))
	}

	grown, err := adm.CreatePartitions(ctx, 1, "legacy")
	if err != nil {
		t.Fatal(err)
	}
	if g := grown["legacy"]; !errors.Is(g.Err, kerr.InvalidReplicationFactor) || !strings.Contains(g.ErrMessage, "is even") {
		t.Errorf("grow legacy: %v %q, want INVALID_REPLICATION_FACTOR saying why", g.Err, g.ErrMessage)
	}
	if s, _ := nodes[0].catalog.Topic("legacy"); s.Partitions != 2 {
		t.Errorf("legacy has %d partitions after a refused growth", s.Partitions)
	}
	cur := spec.Replicas[0]
	var other int32
	for _, n := range nodes {
		if !slices.Contains(cur, n.NodeID()) {
			other = n.NodeID()
		}
	}
	var move kadm.AlterPartitionAssignmentsReq
	move.Assign("legacy", 0, []int32{cur[0], other})
	moved, err := adm.AlterPartitionAssignments(ctx, move)
	if err != nil {
		t.Fatal(err)
	}
	if m := moved["legacy"][0]; !errors.Is(m.Err, kerr.InvalidReplicationFactor) || !strings.Contains(m.ErrMessage, "is even") {
		t.Errorf("move legacy/0 to %v: %v %q, want INVALID_REPLICATION_FACTOR saying why", []int32{cur[0], other}, m.Err, m.ErrMessage)
	}
	if s, _ := nodes[0].catalog.Topic("legacy"); len(s.Moves) != 0 {
		t.Errorf("a refused move is recorded: %v", s.Moves)
	}

	for _, n := range nodes {
		retry.Run(t, 20*time.Second, func() error {
			m := scrapeMetrics(n)
			if err := m.check("spool_topics_even_replication_factor", eq(1), "1"); err != nil {
				return fmt.Errorf("node %d: %w", n.NodeID(), err)
			}
			return m.check("spool_partitions_even_replication_factor", eq(2), "2")
		})
	}

	// At start, a node warns of the even-factor topics its catalog holds.
	down := nodes[2]
	stopNode(t, down)
	cfg := down.cfg
	logger := logrus.New()
	logger.SetOutput(os.Stderr)
	logger.SetLevel(logrus.WarnLevel)
	hook := logtest.NewLocal(logger)
	cfg.Logger = logger
	back := startNode(t, cfg)
	warned, configWarned := false, false
	for _, e := range hook.AllEntries() {
		if strings.Contains(e.Message, "even replication factor") && fmt.Sprint(e.Data["topics"]) == "[legacy]" {
			warned = true
		}
		if e.Data["flag"] == "--default-replication-factor" && fmt.Sprint(e.Data["at_most"]) == "3" {
			configWarned = true
		}
	}
	if !warned {
		t.Errorf("node %d started without warning of legacy's factor of 2", back.NodeID())
	}
	if !configWarned {
		t.Errorf("node %d started without warning that its default factor of 4 gives 3", back.NodeID())
	}
}

// TestTwoBrokerOffsetsTopicSurvivesEitherNode: with 2 brokers,
// __consumer_offsets gets one copy per partition (not a Raft group of 2,
// which stops when either broker does), spread over both; once one broker
// is killed, the groups whose offsets partition is on the other keep
// working: commits, offset fetches and a consumer group that joins and
// consumes.
func TestTwoBrokerOffsetsTopicSurvivesEitherNode(t *testing.T) {
	var nodes []*Node
	for id := int32(1); id <= 2; id++ {
		cfg := groupTestConfig(t, t.TempDir())
		cfg.Groups.OffsetsTopicPartitions = 8
		cfg.NodeID = id
		if id > 1 {
			cfg.Gossip.Join = []string{nodes[0].Membership().Local().GossipAddr}
		}
		nodes = append(nodes, startNode(t, cfg))
	}
	waitMembers(t, nodes, 2)
	survivor, victim := nodes[0], nodes[1]
	cl := newClient(t, survivor)
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)

	// The data topic lives on the survivor.
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "work", -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{survivor.NodeID()}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req.Topics = append(req.Topics, rt)
	if resp := rawRequest[*kmsg.CreateTopicsResponse](t, cl, req); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create work: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	waitTopic(t, nodes, "work")
	const records = 10
	prod := newClient(t, survivor)
	for i := range records {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "work", Value: []byte(recordValue(i))}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}

	// A commit creates __consumer_offsets.
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "work", Partition: 0, At: 1, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "first", offs); err != nil {
		t.Fatalf("commit: %v", err)
	}
	spec := waitTopic(t, nodes, group.TopicName)
	if spec.ReplicationFactor != 1 {
		t.Fatalf("%s has replication factor %d on 2 brokers, want 1", group.TopicName, spec.ReplicationFactor)
	}
	on := map[int32]int{}
	for p, rs := range spec.Replicas {
		if len(rs) != 1 {
			t.Fatalf("%s/%d has replicas %v, want 1", group.TopicName, p, rs)
		}
		on[rs[0]]++
	}
	if on[survivor.NodeID()] == 0 || on[victim.NodeID()] == 0 {
		t.Fatalf("%s partitions per broker %v: not spread over both", group.TopicName, on)
	}
	// A group coordinated on each broker.
	groupOn := func(broker int32) string {
		for i := range 1000 {
			g := fmt.Sprintf("g%d", i)
			if spec.Replicas[group.PartitionFor(g, spec.Partitions)][0] == broker {
				return g
			}
		}
		t.Fatalf("no group id hashes to a partition on broker %d", broker)
		return ""
	}
	alive, lost := groupOn(survivor.NodeID()), groupOn(victim.NodeID())
	for _, g := range []string{alive, lost} {
		if err := adm.CommitAllOffsets(ctx, g, offs); err != nil {
			t.Fatalf("commit for %s: %v", g, err)
		}
	}

	stopNode(t, victim) // as a crash would: its partitions have no other copy
	waitMembers(t, nodes[:1], 1)

	offs = kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "work", Partition: 0, At: 3, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, alive, offs); err != nil {
		t.Fatalf("commit for %s, coordinated on the survivor: %v", alive, err)
	}
	fetched, err := adm.FetchOffsets(ctx, alive)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", alive, err)
	}
	if o, ok := fetched.Lookup("work", 0); !ok || o.Err != nil || o.At != 3 {
		t.Fatalf("offset of %s on work/0: %+v (%v), want 3", alive, o, ok)
	}
	// A consumer group on the survivor joins and reads on from the commit.
	consumer := newClient(t, survivor, kgo.ConsumerGroup(alive), kgo.ConsumeTopics("work"))
	var got []*kgo.Record
	for len(got) < records-3 {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("group %s consumed %d of %d records: %v", alive, len(got), records-3, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		got = append(got, fs.Records()...)
	}
	if got[0].Offset != 3 {
		t.Errorf("group %s resumed at offset %d, want 3", alive, got[0].Offset)
	}
	// ListGroups on the survivor answers for what it holds, without an
	// error for the partitions only the stopped broker held: a client
	// (kadm, like Kafka's admin client) would drop a broker's groups.
	lg := rawRequest[*kmsg.ListGroupsResponse](t, cl, kmsg.NewPtrListGroupsRequest())
	listed := map[string]bool{}
	for _, g := range lg.Groups {
		listed[g.Group] = true
	}
	if lg.ErrorCode != 0 || !listed[alive] || listed[lost] {
		t.Errorf("ListGroups on the survivor: %v, groups %v; want no error, %s listed and not %s", kerr.ErrorForCode(lg.ErrorCode), listed, alive, lost)
	}
	if kl, err := adm.ListGroups(ctx); err != nil || !slices.Contains(kl.Groups(), alive) {
		t.Errorf("kadm ListGroups: %v %v, want %s", kl.Groups(), err, alive)
	}
	// The other group's coordinator is gone with its only copy.
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := adm.CommitAllOffsets(short, lost, offs); err == nil {
		t.Errorf("commit for %s, whose offsets partition was only on the stopped broker, succeeded", lost)
	}
}
