package integration

// IBM/sarama's ClusterAdmin (Kafka 3.6 versions) against a real node for the
// new admin APIs it has calls for: CreatePartitions, DeleteRecords,
// AlterConfigs, IncrementalAlterConfigs, DescribeConfigs of the broker,
// DescribeLogDirs and OffsetDelete.

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/IBM/sarama"
)

func TestAdminSarama(t *testing.T) {
	n := StartNode(t)
	const topic = "sarama-admin"
	saramaCreateTopic(t, n.KafkaAddr, topic, 2)
	cfg := saramaConfig("none")
	adm, err := sarama.NewClusterAdmin([]string{n.KafkaAddr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()

	// CreatePartitions, then records on a new partition.
	if err := adm.CreatePartitions(topic, 4, nil, false); err != nil {
		t.Fatalf("create partitions: %v", err)
	}
	if err := adm.CreatePartitions(topic, 3, nil, false); !errors.Is(err, sarama.ErrInvalidPartitions) {
		t.Fatalf("create partitions down to 3: %v, want INVALID_PARTITIONS", err)
	}
	client, err := sarama.NewClient([]string{n.KafkaAddr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := client.RefreshMetadata(topic); err != nil {
		t.Fatal(err)
	}
	if parts, err := client.Partitions(topic); err != nil || len(parts) != 4 {
		t.Fatalf("partitions after create partitions to 4: %v %v", parts, err)
	}
	pcfg := saramaConfig("none")
	pcfg.Producer.Partitioner = sarama.NewManualPartitioner
	prod, err := sarama.NewSyncProducer([]string{n.KafkaAddr}, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 5 {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 3, Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
			t.Fatalf("produce to new partition 3: %v", err)
		}
	}

	// DeleteRecords.
	if err := adm.DeleteRecords(topic, map[int32]int64{3: 3}); err != nil {
		t.Fatalf("delete records: %v", err)
	}
	if off, err := client.GetOffset(topic, 3, sarama.OffsetOldest); err != nil || off != 3 {
		t.Fatalf("oldest offset of partition 3 after delete before 3: %d %v", off, err)
	}

	// AlterConfigs and IncrementalAlterConfigs, read back.
	retention := "120000"
	if err := adm.AlterConfig(sarama.TopicResource, topic, map[string]*string{"retention.ms": &retention}, false); err != nil {
		t.Fatalf("alter config: %v", err)
	}
	seg := "3600000"
	if err := adm.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"segment.ms": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &seg},
	}, false); err != nil {
		t.Fatalf("incremental alter config: %v", err)
	}
	bogus := "1"
	if err := adm.AlterConfig(sarama.TopicResource, topic, map[string]*string{"bogus.key": &bogus}, false); !errors.Is(err, sarama.ErrInvalidConfig) {
		t.Fatalf("alter config with an unknown key: %v, want INVALID_CONFIG", err)
	}
	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]sarama.ConfigEntry{}
	for _, e := range entries {
		got[e.Name] = e
	}
	if e := got["retention.ms"]; e.Value != retention || e.Source != sarama.SourceTopic {
		t.Errorf("retention.ms %+v", e)
	}
	if e := got["segment.ms"]; e.Value != seg || e.Source != sarama.SourceTopic {
		t.Errorf("segment.ms %+v", e)
	}

	// DescribeConfigs of the broker: read-only, with sources.
	bentries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.BrokerResource, Name: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(bentries) < 10 {
		t.Fatalf("broker configs: %+v", bentries)
	}
	for _, e := range bentries {
		if !e.ReadOnly || (e.Source != sarama.SourceDefault && e.Source != sarama.SourceStaticBroker) {
			t.Errorf("broker config %+v: want read-only, default or static", e)
		}
	}

	// DescribeLogDirs.
	dirs, err := adm.DescribeLogDirs([]int32{1})
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(n.Dir)
	found := false
	for _, d := range dirs[1] {
		if d.Path != abs {
			t.Errorf("log dir %q, want %q", d.Path, abs)
		}
		for _, dt := range d.Topics {
			for _, dp := range dt.Partitions {
				if dt.Topic == topic && dp.PartitionID == 3 {
					found = dp.Size > 0 && dp.OffsetLag == 0
				}
			}
		}
	}
	if !found {
		t.Fatalf("log dirs lack %s/3 with its size: %+v", topic, dirs)
	}

	// OffsetDelete of a group with no members.
	om, err := sarama.NewOffsetManagerFromClient("sarama-od", client)
	if err != nil {
		t.Fatal(err)
	}
	pom, err := om.ManagePartition(topic, 3)
	if err != nil {
		t.Fatal(err)
	}
	pom.MarkOffset(4, "")
	om.Commit()
	pom.Close()
	om.Close()
	if offs, err := adm.ListConsumerGroupOffsets("sarama-od", map[string][]int32{topic: {3}}); err != nil || offs.GetBlock(topic, 3).Offset != 4 {
		t.Fatalf("committed offset: %v", err)
	}
	if err := adm.DeleteConsumerGroupOffset("sarama-od", topic, 3); err != nil {
		t.Fatalf("delete consumer group offset: %v", err)
	}
	offs, err := adm.ListConsumerGroupOffsets("sarama-od", map[string][]int32{topic: {3}})
	if err != nil {
		t.Fatal(err)
	}
	if b := offs.GetBlock(topic, 3); b != nil && b.Offset != -1 {
		t.Fatalf("offset %d still committed after OffsetDelete", b.Offset)
	}
}
