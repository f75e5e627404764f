package integration

// segmentio/kafka-go's Client against a real node for the new admin APIs it
// has calls for: CreatePartitions, AlterConfigs, IncrementalAlterConfigs and
// OffsetDelete. Effects are read back with franz-go.

import (
	"errors"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAdminKafkaGoClient(t *testing.T) {
	n := StartNode(t)
	const topic = "kafkago-admin"
	franzCreateTopic(t, n.KafkaAddr, topic, 1)
	c := &kafka.Client{Addr: kafka.TCP(n.KafkaAddr), Timeout: 10 * time.Second}
	ctx := ctxTimeout(t, 60*time.Second)
	adm := kadm.NewClient(franzClient(t, n.KafkaAddr))

	cp, err := c.CreatePartitions(ctx, &kafka.CreatePartitionsRequest{Topics: []kafka.TopicPartitionsConfig{{Name: topic, Count: 3}}})
	if err != nil || cp.Errors[topic] != nil {
		t.Fatalf("create partitions: %v %v", err, cp)
	}
	if topics, err := adm.ListTopics(ctx, topic); err != nil || len(topics[topic].Partitions) != 3 {
		t.Fatalf("%d partitions after create partitions to 3: %v", len(topics[topic].Partitions), err)
	}

	ac, err := c.AlterConfigs(ctx, &kafka.AlterConfigsRequest{Resources: []kafka.AlterConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
		Configs: []kafka.AlterConfigRequestConfig{{Name: "retention.bytes", Value: "1048576"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ac.Errors {
		if e != nil {
			t.Fatalf("alter configs: %v", e)
		}
	}
	if v, src := topicConfigSource(t, adm, topic, "retention.bytes"); v != "1048576" || src != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.bytes = %s (%s)", v, src)
	}

	ic, err := c.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{Resources: []kafka.IncrementalAlterConfigsRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
		Configs: []kafka.IncrementalAlterConfigsRequestConfig{
			{Name: "retention.bytes", ConfigOperation: kafka.ConfigOperationDelete},
			{Name: "message.timestamp.type", Value: "LogAppendTime", ConfigOperation: kafka.ConfigOperationSet},
		},
	}}})
	if err != nil || len(ic.Resources) != 1 || ic.Resources[0].Error != nil {
		t.Fatalf("incremental alter configs: %v %+v", err, ic)
	}
	if _, src := topicConfigSource(t, adm, topic, "retention.bytes"); src != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("retention.bytes source %s after DELETE", src)
	}
	if v, _ := topicConfigSource(t, adm, topic, "message.timestamp.type"); v != "LogAppendTime" {
		t.Errorf("message.timestamp.type = %s", v)
	}
	ic, err = c.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{Resources: []kafka.IncrementalAlterConfigsRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
		Configs: []kafka.IncrementalAlterConfigsRequestConfig{{Name: "retention.ms", Value: "x", ConfigOperation: kafka.ConfigOperationSet}},
	}}})
	if err != nil || len(ic.Resources) != 1 || !errors.Is(ic.Resources[0].Error, kafka.InvalidConfiguration) {
		t.Fatalf("retention.ms=x: %v %+v, want INVALID_CONFIG", err, ic)
	}

	var commit kadm.Offsets
	commit.Add(kadm.Offset{Topic: topic, Partition: 2, At: 0, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "kafkago-od", commit); err != nil {
		t.Fatal(err)
	}
	od, err := c.OffsetDelete(ctx, &kafka.OffsetDeleteRequest{GroupID: "kafkago-od", Topics: map[string][]int{topic: {2}}})
	if err != nil || od.Error != nil || len(od.Topics[topic]) != 1 || od.Topics[topic][0].Error != nil {
		t.Fatalf("offset delete: %v %+v", err, od)
	}
	fetched, err := adm.FetchOffsets(ctx, "kafkago-od")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fetched.Lookup(topic, 2); ok {
		t.Fatal("offset still committed after kafka-go's OffsetDelete")
	}
}
