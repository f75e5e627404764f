package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/client"
	"github.com/spool-log/spool/node"
	"github.com/spool-log/spool/node/admin"
)

// TestDescribeAndPlacementShowLeadership: after a restart moves the
// leader epoch to 1, `spool topic describe` and `spool placement` (table
// and JSON, the latter from /v1/placement) show leader, epoch, ISR and
// offline replicas per partition.
func TestDescribeAndPlacementShowLeadership(t *testing.T) {
	dir := t.TempDir()
	first := testNode(t, func(c *node.Config) { c.NodeID = 4; c.DataDir = dir })
	cl, err := kgo.NewClient(kgo.SeedBrokers(first.KafkaAddr()), kgo.DefaultProduceTopic("led"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "led"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if err := first.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	n := testNode(t, func(c *node.Config) { c.NodeID = 4; c.DataDir = dir })

	out, _, err := runCLI(t, "", "topic", "describe", "led", "-o", "json", "--brokers", n.KafkaAddr())
	var described []client.DescribedTopic
	if err != nil || json.Unmarshal([]byte(out), &described) != nil || len(described) != 1 || len(described[0].Partitions) != 1 {
		t.Fatalf("topic describe -o json: %v\n%s", err, out)
	}
	if p := described[0].Partitions[0]; p.Leader != 4 || p.LeaderEpoch != 1 || !slices.Equal(p.ISR, []int32{4}) || p.Offline == nil || len(p.Offline) != 0 {
		t.Fatalf("topic describe: %+v, want leader 4 epoch 1 ISR [4] offline []", p)
	}
	out, _, err = runCLI(t, "", "topic", "describe", "led", "--brokers", n.KafkaAddr())
	lines := strings.Split(out, "\n")
	if err != nil || len(lines) < 3 || !slices.Equal(strings.Fields(lines[1]), []string{"PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE", "START", "END"}) ||
		!slices.Equal(strings.Fields(lines[2]), []string{"0", "4", "1", "[4]", "[4]", "[]", "0", "1"}) {
		t.Fatalf("topic describe:\n%s", out)
	}

	out, _, err = runCLI(t, "", "placement", "led", "-o", "json", "--admin", n.AdminAddr())
	var placed []admin.PartitionPlacement
	if err != nil || json.Unmarshal([]byte(out), &placed) != nil || len(placed) != 1 {
		t.Fatalf("placement -o json: %v\n%s", err, out)
	}
	if p := placed[0]; p.Leader != 4 || p.LeaderEpoch != 1 || !slices.Equal(p.ISR, []int32{4}) || p.Offline == nil || len(p.Offline) != 0 {
		t.Fatalf("placement: %+v, want leader 4 epoch 1 ISR [4] offline []", p)
	}
	out, _, err = runCLI(t, "", "placement", "led", "--admin", n.AdminAddr())
	lines = strings.Split(out, "\n")
	if err != nil || len(lines) < 2 || !slices.Equal(strings.Fields(lines[0]), []string{"TOPIC", "PARTITION", "REPLICAS", "LEADER", "EPOCH", "ISR", "OFFLINE", "PREFERRED", "DIFFERS"}) ||
		!slices.Equal(strings.Fields(lines[1]), []string{"led", "0", "[4]", "4", "1", "[4]", "[]", "[4]"}) {
		t.Fatalf("placement:\n%s", out)
	}
}
