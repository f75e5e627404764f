package integration

// sarama pinned to Kafka versions: 4.0 (with ApiVersions negotiation and
// without it, when sarama picks every request version from the configured
// Version: Produce v10+, Fetch v13+ by topic id...) and 2.1. And sarama's
// ClusterAdmin creating a topic with a manual replica assignment on a
// 3-node cluster.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/spool-log/spool/internal/retry"
)

// TestSaramaVersions produces with acks 0, 1 and all and consumes the
// records back, for each Version, with the configured Version deciding the
// request versions.
func TestSaramaVersions(t *testing.T) {
	n := StartNode(t)
	for _, c := range []struct {
		name        string
		version     sarama.KafkaVersion
		apiVersions bool
	}{
		{"V4_0_0_0", sarama.V4_0_0_0, true},
		{"V4_0_0_0-no-ApiVersionsRequest", sarama.V4_0_0_0, false},
		{"V2_1_0_0", sarama.V2_1_0_0, true},
		{"V2_1_0_0-no-ApiVersionsRequest", sarama.V2_1_0_0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			config := func() *sarama.Config {
				cfg := saramaConfig("none")
				cfg.Version = c.version
				cfg.ApiVersionsRequest = c.apiVersions
				return cfg
			}
			topic := uniqueTopic("sarama-" + strings.ToLower(strings.ReplaceAll(c.name, "_", "")))
			adm, err := sarama.NewClusterAdmin([]string{n.KafkaAddr}, config())
			if err != nil {
				t.Fatalf("cluster admin: %v", err)
			}
			if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
				t.Fatalf("create topic: %v", err)
			}
			adm.Close()

			var want []string
			for _, acks := range []sarama.RequiredAcks{sarama.NoResponse, sarama.WaitForLocal, sarama.WaitForAll} {
				cfg := config()
				cfg.Producer.RequiredAcks = acks
				p, err := sarama.NewSyncProducer([]string{n.KafkaAddr}, cfg)
				if err != nil {
					t.Fatalf("producer (acks %d): %v", acks, err)
				}
				var msgs []*sarama.ProducerMessage
				for i := range 5 {
					v := fmt.Sprintf("acks%d-%d", acks, i)
					want = append(want, v)
					msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(v), Timestamp: time.Now()})
				}
				if err := p.SendMessages(msgs); err != nil {
					t.Fatalf("produce with acks %d: %v", acks, err)
				}
				if err := p.Close(); err != nil {
					t.Fatalf("close producer (acks %d): %v", acks, err)
				}
				if acks == sarama.NoResponse {
					// Nothing acknowledges acks=0: wait until the
					// records are there before the next producer, so
					// the order below is the order sent.
					retry.Run(t, 20*time.Second, func() error {
						ends, err := kadm.NewClient(franzClient(t, n.KafkaAddr)).ListEndOffsets(ctxTimeout(t, 5*time.Second), topic)
						if err != nil {
							return err
						}
						if o, _ := ends.Lookup(topic, 0); o.Offset < int64(len(want)) {
							return fmt.Errorf("%d of %d acks=0 records stored (%v)", o.Offset, len(want), o.Err)
						}
						return nil
					})
				}
			}

			c, err := sarama.NewConsumer([]string{n.KafkaAddr}, config())
			if err != nil {
				t.Fatalf("consumer: %v", err)
			}
			defer c.Close()
			pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
			if err != nil {
				t.Fatalf("consume: %v", err)
			}
			defer pc.Close()
			deadline := time.After(30 * time.Second)
			var got []string
			for len(got) < len(want) {
				select {
				case m := <-pc.Messages():
					if m.Offset != int64(len(got)) {
						t.Fatalf("message %d at offset %d", len(got), m.Offset)
					}
					got = append(got, string(m.Value))
				case err := <-pc.Errors():
					t.Fatalf("consume: %v", err)
				case <-deadline:
					t.Fatalf("consumed %d of %d messages: %v", len(got), len(want), got)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("consumed %v, want %v", got, want)
			}
		})
	}
}

// TestSaramaManualReplicaAssignment creates, on a 4-node cluster, a topic
// whose partitions are pinned by TopicDetail.ReplicaAssignment (three
// copies each: replication factors are odd): Metadata from every node
// shows the replicas and leaders asked for, records produced to each
// partition are stored on the nodes asked and nowhere else, and an
// assignment naming a broker that does not exist is refused.
func TestSaramaManualReplicaAssignment(t *testing.T) {
	nodes := startCluster(t, 4)
	topic := uniqueTopic("pinned")
	assignment := map[int32][]int32{0: {3, 1, 4}, 1: {2, 3, 1}, 2: {4, 1, 2}, 3: {3, 2, 4}}

	cfg := saramaConfig("none")
	adm, err := sarama.NewClusterAdmin([]string{nodes[0].KafkaAddr}, cfg)
	if err != nil {
		t.Fatalf("cluster admin: %v", err)
	}
	defer adm.Close()
	err = adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1, ReplicaAssignment: assignment}, false)
	if err != nil {
		t.Fatalf("create %s with assignment %v: %v", topic, assignment, err)
	}
	err = adm.CreateTopic(topic+"-bad", &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1, ReplicaAssignment: map[int32][]int32{0: {1, 2, 9}}}, false)
	var te *sarama.TopicError
	if !errors.As(err, &te) || te.Err != sarama.ErrInvalidReplicaAssignment {
		t.Fatalf("assignment naming broker 9: %v, want INVALID_REPLICA_ASSIGNMENT", err)
	}
	waitTopicEverywhere(t, nodes, topic)

	// Each partition's replicas form a Raft group; its first replica is
	// the preferred leader, which leads once the group has settled.
	for _, n := range nodes {
		retry.Run(t, 30*time.Second, func() error {
			_, parts := metadata(t, n, topic)
			if len(parts) != len(assignment) {
				return fmt.Errorf("node %d: %d partitions, want %d", n.ID, len(parts), len(assignment))
			}
			for p, pm := range parts {
				want := assignment[int32(p)]
				if pm.ErrorCode != 0 || !slices.Equal(pm.Replicas, want) || pm.Leader != want[0] {
					return fmt.Errorf("node %d: partition %d %+v, want replicas %v led by %d", n.ID, p, pm, want, want[0])
				}
			}
			return nil
		})
	}

	// Produce to every partition through node 1, then look at each node's
	// data directory: the records are in the asked replicas' segments and
	// nowhere else.
	pcfg := saramaConfig("none")
	pcfg.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer([]string{nodes[0].KafkaAddr}, pcfg)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	for part := range int32(len(assignment)) {
		msg := &sarama.ProducerMessage{Topic: topic, Partition: part, Value: sarama.StringEncoder(fmt.Sprintf("pinned-%d", part))}
		if _, _, err := p.SendMessage(msg); err != nil {
			t.Fatalf("produce to partition %d: %v", part, err)
		}
	}
	p.Close()
	for part, replicas := range assignment {
		for _, n := range nodes {
			if !slices.Contains(replicas, int32(n.ID)) {
				if bytes := segmentBytes(t, n.Dir, topic, part); bytes != 0 {
					t.Errorf("partition %d: node %d, not among its replicas %v, stores %d bytes", part, n.ID, replicas, bytes)
				}
				continue
			}
			retry.Run(t, 20*time.Second, func() error {
				return retry.Check(segmentBytes(t, n.Dir, topic, part) > 0, "partition %d: its replica, node %d, stores no records", part, n.ID)
			})
		}
		got := saramaConsume(t, nodes[1].KafkaAddr, topic, part, sarama.OffsetOldest, 1)
		if string(got[0].Value) != fmt.Sprintf("pinned-%d", part) {
			t.Errorf("partition %d holds %q", part, got[0].Value)
		}
	}
}

// segmentBytes is the size of partition part's segment files under a
// node's data directory, 0 if it has none.
func segmentBytes(t testing.TB, dataDir, topic string, part int32) int64 {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dataDir, fmt.Sprintf("%s-%d", topic, part), "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, l := range logs {
		fi, err := os.Stat(l)
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
	}
	return total
}
