package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
)

// TestTwoNodesEvenFactorRefusedAndEitherNodeDies: on two real nodes,
// `spool topic create -r 2` is refused with the reason (a Raft group of 2
// survives no failure); __consumer_offsets gets one copy per partition,
// spread over both; and whichever node is killed (-9), the groups
// coordinated on the other keep working: a consumer group joins, consumes
// and commits, its offsets are fetched back, and `spool group list` lists
// it and names the dead broker.
func TestTwoNodesEvenFactorRefusedAndEitherNodeDies(t *testing.T) {
	nodes := startCluster(t, 2, withQuickGroups, WithArgs("--offsets-topic-partitions", "6"))
	cli := func(n *Node, args ...string) cliRun {
		t.Helper()
		return spoolRun(t, "", append(args, "--brokers", n.KafkaAddr, "--timeout", "3s")...)
	}
	r := cli(nodes[0], "topic", "create", uniqueTopic("even"), "-r", "2")
	if r.code == 0 || !strings.Contains(r.stderr, "INVALID_REPLICATION_FACTOR") || !strings.Contains(r.stderr, "replication factor 2 is even") || !strings.Contains(r.stderr, "survives none") {
		t.Fatalf("topic create -r 2: exit %d, stderr %q; want refused with the reason", r.code, r.stderr)
	}
	t.Logf("MEASURED: topic create -r 2 refused: %s", strings.TrimSpace(r.stderr))

	// One data topic on each node, so that each survivor has its own.
	adm := kadm.NewClient(franzClient(t, nodes[0].KafkaAddr))
	topicOn := map[int]string{}
	for _, n := range nodes {
		topic := uniqueTopic(fmt.Sprintf("on%d", n.ID))
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = 0, []int32{int32(n.ID)}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctxTimeout(t, 20*time.Second), franzClient(t, nodes[0].KafkaAddr))
		if err != nil || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("create %s on node %d: %v %v", topic, n.ID, err, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
		}
		topicOn[n.ID] = topic
	}
	waitTopicEverywhere(t, nodes, topicOn[1])
	waitTopicEverywhere(t, nodes, topicOn[2])
	const records = 5
	for id, topic := range topicOn {
		recs := makeRecords(fmt.Sprint("n", id), records, recentBase())
		franzProduce(t, franzClient(t, nodes[id-1].KafkaAddr), topic, recs, 1)
	}
	groupFor := map[int]string{1: groupOn(t, adm, 1, "on1"), 2: groupOn(t, adm, 2, "on2")}
	_, parts := metadata(t, nodes[0], "__consumer_offsets")
	on := map[int32]int{}
	for i, p := range parts {
		if len(p.Replicas) != 1 {
			t.Fatalf("__consumer_offsets/%d has replicas %v on 2 brokers, want 1", i, p.Replicas)
		}
		on[p.Replicas[0]]++
	}
	if on[1] == 0 || on[2] == 0 {
		t.Fatalf("__consumer_offsets partitions per broker %v: not spread over both", on)
	}

	for _, victim := range []int{2, 1} {
		survivor := nodes[2-victim]
		dead := nodes[victim-1]
		group, topic := groupFor[survivor.ID], topicOn[survivor.ID]
		t.Run(fmt.Sprintf("node %d killed", victim), func(t *testing.T) {
			dead.Kill()
			waitMembers(t, survivor, 30*time.Second, func(ms map[int]member) error {
				return wantStatus(ms, 2, "failed", victim)
			})
			killed := time.Now()
			consumer := franzClient(t, survivor.KafkaAddr, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
			ctx := ctxTimeout(t, 30*time.Second)
			got := 0
			for got < records {
				fs := consumer.PollFetches(ctx)
				if ctx.Err() != nil {
					t.Fatalf("group %s consumed %d of %d records of %s with node %d dead: %v", group, got, records, topic, victim, ctx.Err())
				}
				fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
				got += fs.NumRecords()
			}
			if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
				t.Fatalf("group %s commits with node %d dead: %v", group, victim, err)
			}
			sadm := kadm.NewClient(franzClient(t, survivor.KafkaAddr))
			offs, err := sadm.FetchOffsets(ctx, group)
			if err != nil {
				t.Fatalf("fetch offsets of %s with node %d dead: %v", group, victim, err)
			}
			if o, ok := offs.Lookup(topic, 0); !ok || o.At != records {
				t.Fatalf("offset of %s on %s/0: %+v (%v), want %d", group, topic, o, ok, records)
			}
			t.Logf("MEASURED: node %d killed; group %s on node %d consumed, committed and fetched its offsets %v later", victim, group, survivor.ID, time.Since(killed).Round(time.Millisecond))
			list := cli(survivor, "group", "list")
			if !strings.Contains(list.stdout, group) || !strings.Contains(list.stderr, fmt.Sprintf("broker %d", victim)) {
				t.Errorf("group list with node %d dead: exit %d, stdout %q, stderr %q; want %s listed and broker %d named", victim, list.code, list.stdout, list.stderr, group, victim)
			}
			consumer.Close()
			dead.Start()
			retry.Run(t, 30*time.Second, func() error {
				ms, err := members(t, survivor)
				if err != nil {
					return err
				}
				return wantStatus(ms, 2, "alive", 1, 2)
			})
		})
		if t.Failed() {
			return
		}
	}
}
