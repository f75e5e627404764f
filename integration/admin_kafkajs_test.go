package integration

// kafkajs' admin client against a real node, through js/admin.js:
// CreatePartitions, DeleteRecords, AlterConfigs and DescribeConfigs of the
// broker. Effects are read back with franz-go.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAdminKafkajs(t *testing.T) {
	needKafkajs(t)
	n := StartNode(t)
	const topic = "kafkajs-admin"
	franzCreateTopic(t, n.KafkaAddr, topic, 1)
	cl := franzClient(t, n.KafkaAddr, kgo.DefaultProduceTopic(topic))
	ctx := ctxTimeout(t, 60*time.Second)
	for i := range 5 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	cmd := exec.CommandContext(ctx, "node", "js/admin.js", topic)
	cmd.Env = append(os.Environ(), "KAFKA_BROKERS="+n.KafkaAddr)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node js/admin.js: %v\n%s\n%s", err, out, stderr)
	}
	var res struct {
		CreatePartitions, DeleteRecords, AlterConfigs string
		BrokerConfigs                                 map[string]struct {
			Value    string `json:"value"`
			ReadOnly bool   `json:"readOnly"`
			Source   int    `json:"source"`
		}
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("script output %q: %v", out, err)
	}

	adm := kadm.NewClient(franzClient(t, n.KafkaAddr)) // a new client: kgo caches metadata a while
	if topics, err := adm.ListTopics(ctx, topic); err != nil || len(topics[topic].Partitions) != 4 {
		t.Errorf("%d partitions after kafkajs createPartitions(4): %v", len(topics[topic].Partitions), err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := starts.Lookup(topic, 0); s.Offset != 2 {
		t.Errorf("start offset %d after kafkajs deleteTopicRecords(before 2)", s.Offset)
	}
	if v, src := topicConfigSource(t, adm, topic, "retention.ms"); v != "7200000" || src != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("retention.ms = %s (%s) after kafkajs alterConfigs", v, src)
	}
	bid, ok := res.BrokerConfigs["broker.id"]
	if !ok || bid.Value != "1" || !bid.ReadOnly || bid.Source != int(kmsg.ConfigSourceDefaultConfig) {
		t.Errorf("broker.id as kafkajs sees it: %+v %v", bid, ok)
	}
}
