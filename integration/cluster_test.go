package integration

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
)

// Clusters of real `spool node` processes on loopback, gossiping with the
// fast timings (sub-second failure detection), driven through franz-go and
// the `spool members` CLI.

// TestClusterProduceOnOneConsumeOnAnother creates a topic on node 1, produces
// through a client that knows only node 2 and consumes through one that knows
// only node 3; then stops node 3 gracefully and sees it "left".
func TestClusterProduceOnOneConsumeOnAnother(t *testing.T) {
	nodes := startCluster(t, 3)
	a, b, c := nodes[0], nodes[1], nodes[2]
	topic := uniqueTopic("cluster")
	franzCreateTopic(t, a.KafkaAddr, topic, 6)
	waitTopicEverywhere(t, nodes, topic)

	for _, n := range nodes {
		brokers, parts := metadata(t, n, topic)
		if !slices.Equal(brokers, []int32{1, 2, 3}) {
			t.Errorf("node %d lists brokers %v", n.ID, brokers)
		}
		for p, pm := range parts {
			if pm.ErrorCode != 0 || len(pm.Replicas) != 1 || pm.Leader != pm.Replicas[0] {
				t.Errorf("node %d: partition %d %+v", n.ID, p, pm)
			}
		}
	}

	recs := makeRecords("cluster", 120, time.Now())
	franzProduce(t, franzClient(t, b.KafkaAddr), topic, recs, 10)
	parts := byPartition(t, recs)
	if len(parts) < 4 {
		t.Errorf("120 keyed records reached %d of 6 partitions", len(parts))
	}
	franzVerifyPartitions(t, c.KafkaAddr, topic, recs)

	// Partitions led, as the CLI shows them, add up to the topic's.
	ms, err := members(t, a)
	if err != nil {
		t.Fatal(err)
	}
	led := 0
	for _, m := range ms {
		led += m.PartitionsLed
	}
	if led != 6 {
		t.Errorf("members lead %d partitions in all, want 6: %v", led, ms)
	}

	c.Stop()
	for _, n := range []*Node{a, b} {
		waitMembers(t, n, 20*time.Second, func(ms map[int]member) error {
			return errors.Join(wantStatus(ms, 3, "left", 3), wantStatus(ms, 3, "alive", 1, 2))
		})
	}
	out, _ := Spool(t, "", "members", "--admin", a.AdminAddr)
	t.Logf("after a graceful stop of node 3:\n%s", out)
}

// TestClusterKillAndRestart kills node 3 with SIGKILL, measures how long the
// others take to see it failed, checks its partitions are unavailable (not
// moved), restarts it without --join and measures how long until a client
// bootstrapped on node 1 reads its data again.
func TestClusterKillAndRestart(t *testing.T) {
	nodes := startCluster(t, 3)
	a, b, c := nodes[0], nodes[1], nodes[2]
	topic := uniqueTopic("crash")
	franzCreateTopic(t, a.KafkaAddr, topic, 6)
	waitTopicEverywhere(t, nodes, topic)
	recs := makeRecords("crash", 90, time.Now())
	franzProduce(t, franzClient(t, a.KafkaAddr), topic, recs, 10)

	_, parts := metadata(t, a, topic)
	var onC []int32
	for p, pm := range parts {
		if pm.Leader == int32(c.ID) {
			onC = append(onC, int32(p))
		}
	}
	if len(onC) == 0 {
		t.Fatalf("no partition of %s on node 3: %+v", topic, parts)
	}

	killed := time.Now()
	c.Kill()
	for _, n := range []*Node{a, b} {
		waitMembers(t, n, 20*time.Second, func(ms map[int]member) error {
			return wantStatus(ms, 3, "failed", 3)
		})
	}
	failureSeen := time.Since(killed)
	t.Logf("MEASURED: kill -9 of node 3 seen as failed by both other nodes after %v", failureSeen.Round(time.Millisecond))

	for _, n := range []*Node{a, b} {
		brokers, parts := metadata(t, n, topic)
		if !slices.Equal(brokers, []int32{1, 2}) {
			t.Errorf("node %d lists brokers %v with node 3 down", n.ID, brokers)
		}
		for p, pm := range parts {
			if slices.Contains(onC, int32(p)) {
				if pm.Leader != -1 || pm.ErrorCode != kerr.LeaderNotAvailable.Code {
					t.Errorf("node %d: partition %d of the dead node: %+v, want LEADER_NOT_AVAILABLE", n.ID, p, pm)
				}
			} else if pm.Leader < 0 || pm.ErrorCode != 0 {
				t.Errorf("node %d: partition %d: %+v", n.ID, p, pm)
			}
		}
	}

	// An operator describing the topic mid-outage sees every partition, the
	// dead node's without a leader or offsets, not an error.
	out, err := Spool(t, "", "topic", "describe", topic, "--brokers", a.KafkaAddr)
	if err != nil {
		t.Fatalf("topic describe with node 3 down: %v\n%s", err, out)
	}
	for _, p := range onC {
		// PARTITION LEADER EPOCH REPLICAS ISR OFFLINE START END
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^%d\s+none\s+-\s+\[3\]\s+\S+\s+\[3\]\s+-\s+-\s*$`, p)).MatchString(out) {
			t.Errorf("topic describe shows partition %d of the dead node wrongly:\n%s", p, out)
		}
	}

	// Restart without --join: Serf's snapshot brings it back.
	c.Join = nil
	restarted := time.Now()
	c.Start()
	var want []testRecord
	for _, r := range recs {
		if slices.Contains(onC, r.Partition) {
			want = append(want, r)
		}
	}
	retry.Run(t, 30*time.Second, func() error {
		ms, err := members(t, a)
		if err != nil {
			return err
		}
		if err := wantStatus(ms, 3, "alive", 1, 2, 3); err != nil {
			return err
		}
		_, parts := metadata(t, a, topic)
		for _, p := range onC {
			if parts[p].Leader != int32(c.ID) {
				return fmt.Errorf("partition %d: leader %d", p, parts[p].Leader)
			}
		}
		return nil
	})
	franzVerifyPartitions(t, a.KafkaAddr, topic, want)
	serving := time.Since(restarted)
	t.Logf("MEASURED: node 3 restarted (no --join) and serving its %d records through node 1 after %v", len(want), serving.Round(time.Millisecond))
	waitMembers(t, b, 20*time.Second, func(ms map[int]member) error { return wantStatus(ms, 3, "alive", 1, 2, 3) })
}

// TestClusterWrongGossipKey starts an encrypted two-node cluster and a third
// node with another key: it stays out, and says why in its log and /readyz.
func TestClusterWrongGossipKey(t *testing.T) {
	const key = "FW7RVHGukuUljBDO2byJonSblgFhXsTF25K/nDDx0fM="
	keyFile := t.TempDir() + "/gossip.key"
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nodes := startCluster(t, 2, WithArgs("--gossip-key-file", keyFile))
	a := nodes[0]

	other := "ZmFrZWtleWZha2VrZXlmYWtla2V5ZmFrZWtleTEyMzQ="
	stranger := startNodeNoWait(t, WithID(3), WithJoin(a.GossipAddr), WithArgs("--gossip-key", other))
	retry.Run(t, 20*time.Second, func() error {
		if !strings.Contains(stranger.Logs(), "another gossip key") {
			return errors.New("node 3 has not logged a gossip-key mismatch yet")
		}
		return nil
	})
	code, body := getStatus(t, stranger, "/readyz")
	if code != 503 || !strings.Contains(body, "gossip key") {
		t.Errorf("/readyz of the node with the wrong key: %d %q", code, body)
	}
	for _, n := range nodes {
		ms, err := members(t, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := wantStatus(ms, 2, "alive", 1, 2); err != nil {
			t.Errorf("node %d: %v", n.ID, err)
		}
	}
	if ms, err := members(t, stranger); err != nil || len(ms) != 1 {
		t.Errorf("the stranger sees %v (%v), want only itself", ms, err)
	}
}

// TestClusterGroupsAcrossNodes runs franz-go group consumers on groups whose
// coordinators sit on each of three nodes, every consumer bootstrapped on a
// node other than its coordinator, and checks the committed offsets from a
// third node.
func TestClusterGroupsAcrossNodes(t *testing.T) {
	nodes := startCluster(t, 3, withQuickGroups, WithArgs("--offsets-topic-partitions", "6"))
	topic := uniqueTopic("groups")
	franzCreateTopic(t, nodes[0].KafkaAddr, topic, 3)
	recs := makeRecords("groups", 45, time.Now())
	waitTopicEverywhere(t, nodes, topic)
	franzProduce(t, franzClient(t, nodes[1].KafkaAddr), topic, recs, 5)

	// The first group request creates __consumer_offsets; let every node
	// learn it before groups spread over them.
	adm := kadm.NewClient(franzClient(t, nodes[0].KafkaAddr))
	retry.Run(t, 20*time.Second, func() error {
		return adm.FindGroupCoordinators(ctxTimeout(t, 10*time.Second), "probe")["probe"].Err
	})
	waitTopicEverywhere(t, nodes, "__consumer_offsets")

	byCoordinator := map[int32]string{}
	for i := 0; len(byCoordinator) < 3 && i < 200; i++ {
		g := fmt.Sprintf("readers-%d", i)
		var coord int32 = -1
		retry.Run(t, 20*time.Second, func() error {
			r := adm.FindGroupCoordinators(ctxTimeout(t, 10*time.Second), g)[g]
			if r.Err != nil {
				return r.Err
			}
			coord = r.NodeID
			return nil
		})
		if _, ok := byCoordinator[coord]; !ok {
			byCoordinator[coord] = g
		}
	}
	if len(byCoordinator) != 3 {
		t.Fatalf("coordinators found on %d nodes only: %v", len(byCoordinator), byCoordinator)
	}

	for coord, g := range byCoordinator {
		boot := nodes[int(coord)%3] // the node after the coordinator
		cl := franzClient(t, boot.KafkaAddr,
			kgo.ConsumerGroup(g), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.DisableAutoCommit(), kgo.FetchMaxWait(300*time.Millisecond))
		ctx := ctxTimeout(t, 30*time.Second)
		got := 0
		for got < len(recs) {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("group %s (coordinator %d, bootstrapped on %d): %d of %d records", g, coord, boot.ID, got, len(recs))
			}
			fs.EachError(func(tp string, p int32, err error) { t.Fatalf("group %s: %s/%d: %v", g, tp, p, err) })
			got += fs.NumRecords()
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("group %s: commit: %v", g, err)
		}
		cl.Close()

		check := kadm.NewClient(franzClient(t, nodes[(int(coord)+1)%3].KafkaAddr))
		offs, err := check.FetchOffsets(ctxTimeout(t, 10*time.Second), g)
		if err != nil {
			t.Fatalf("group %s: fetch offsets: %v", g, err)
		}
		var sum int64
		offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
		if sum != int64(len(recs)) {
			t.Errorf("group %s (coordinator %d): committed offsets add up to %d, want %d", g, coord, sum, len(recs))
		}
		t.Logf("group %s: coordinator node %d, consumer bootstrapped on node %d, committed %d", g, coord, boot.ID, sum)
	}
}
