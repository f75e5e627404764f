package integration

// IBM/sarama against a real node, speaking Kafka 3.6 versions: ClusterAdmin
// topic creation, SyncProducer with every codec, PartitionConsumer reads from
// arbitrary offsets, and Client.GetOffset by time.

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

func saramaConfig(codec string) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.ClientID = "spool-integration-sarama"
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Metadata.Retry.Max = 5
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewHashPartitioner
	cfg.Producer.Retry.Max = 3
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 250 * time.Millisecond
	switch codec {
	case "gzip":
		cfg.Producer.Compression = sarama.CompressionGZIP
	case "snappy":
		cfg.Producer.Compression = sarama.CompressionSnappy
	case "lz4":
		cfg.Producer.Compression = sarama.CompressionLZ4
	case "zstd":
		cfg.Producer.Compression = sarama.CompressionZSTD
	default:
		cfg.Producer.Compression = sarama.CompressionNone
	}
	return cfg
}

func saramaCreateTopic(t testing.TB, addr, topic string, partitions int32) {
	t.Helper()
	adm, err := sarama.NewClusterAdmin([]string{addr}, saramaConfig("none"))
	if err != nil {
		t.Fatalf("sarama cluster admin: %v", err)
	}
	defer adm.Close()
	retention := "3600000"
	err = adm.CreateTopic(topic, &sarama.TopicDetail{
		NumPartitions:     partitions,
		ReplicationFactor: 1,
		ConfigEntries:     map[string]*string{"retention.ms": &retention},
	}, false)
	if err != nil {
		t.Fatalf("sarama create topic %s: %v", topic, err)
	}
	err = adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false)
	var te *sarama.TopicError
	if !errors.As(err, &te) || te.Err != sarama.ErrTopicAlreadyExists {
		t.Errorf("sarama create topic %s twice: %v, want TOPIC_ALREADY_EXISTS", topic, err)
	}
	topics, err := adm.ListTopics()
	if err != nil {
		t.Fatalf("sarama list topics: %v", err)
	}
	if d, ok := topics[topic]; !ok || d.NumPartitions != partitions {
		t.Fatalf("sarama list topics: %s present %v with %d partitions, want %d", topic, ok, d.NumPartitions, partitions)
	}
}

func toSaramaMessage(topic string, r testRecord) *sarama.ProducerMessage {
	m := &sarama.ProducerMessage{
		Topic:     topic,
		Key:       sarama.ByteEncoder(r.Key),
		Value:     sarama.ByteEncoder(r.Value),
		Timestamp: r.Timestamp,
	}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: []byte(h.Value)})
	}
	return m
}

func fromSaramaHeaders(hs []*sarama.RecordHeader) []testHeader {
	out := make([]testHeader, 0, len(hs))
	for _, h := range hs {
		out = append(out, testHeader{Key: string(h.Key), Value: string(h.Value)})
	}
	return out
}

// saramaProduce sends recs with a SyncProducer, perBatch messages per
// SendMessages call, and records where each was acknowledged.
func saramaProduce(t testing.TB, addr, topic, codec string, recs []testRecord, perBatch int) {
	t.Helper()
	p, err := sarama.NewSyncProducer([]string{addr}, saramaConfig(codec))
	if err != nil {
		t.Fatalf("sarama sync producer: %v", err)
	}
	defer p.Close()
	for start := 0; start < len(recs); start += perBatch {
		end := min(start+perBatch, len(recs))
		msgs := make([]*sarama.ProducerMessage, 0, end-start)
		for i := start; i < end; i++ {
			msgs = append(msgs, toSaramaMessage(topic, recs[i]))
		}
		if err := p.SendMessages(msgs); err != nil {
			t.Fatalf("sarama produce (%s) to %s: %v", codec, topic, err)
		}
		for i, m := range msgs {
			recs[start+i].Partition, recs[start+i].Offset = m.Partition, m.Offset
		}
	}
}

// saramaConsume reads n messages of one partition from offset with a
// PartitionConsumer.
func saramaConsume(t testing.TB, addr, topic string, partition int32, offset int64, n int) []*sarama.ConsumerMessage {
	t.Helper()
	c, err := sarama.NewConsumer([]string{addr}, saramaConfig("none"))
	if err != nil {
		t.Fatalf("sarama consumer: %v", err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, partition, offset)
	if err != nil {
		t.Fatalf("sarama consume %s/%d from %d: %v", topic, partition, offset, err)
	}
	defer pc.Close()
	deadline := time.After(30 * time.Second)
	var out []*sarama.ConsumerMessage
	for len(out) < n {
		select {
		case m := <-pc.Messages():
			out = append(out, m)
		case err := <-pc.Errors():
			t.Fatalf("sarama consume %s/%d: %v", topic, partition, err)
		case <-deadline:
			t.Fatalf("sarama consume %s/%d from %d: got %d of %d messages before the deadline", topic, partition, offset, len(out), n)
		}
	}
	return out
}

// TestSaramaRoundTrip creates a 3-partition topic with ClusterAdmin and, for
// every codec, produces keyed messages with headers and CreateTimes through a
// SyncProducer, then reads each partition back with a PartitionConsumer.
func TestSaramaRoundTrip(t *testing.T) {
	n := StartNode(t)
	const partitions = 3
	for _, codec := range codecNames {
		t.Run(codec, func(t *testing.T) {
			topic := uniqueTopic("sarama-" + codec)
			saramaCreateTopic(t, n.KafkaAddr, topic, partitions)
			recs := makeRecords(codec, 60, recentBase())
			saramaProduce(t, n.KafkaAddr, topic, codec, recs, 20)

			used := map[int32]bool{}
			for _, r := range recs {
				want, err := sarama.NewHashPartitioner(topic).Partition(toSaramaMessage(topic, r), partitions)
				if err != nil {
					t.Fatal(err)
				}
				if r.Partition != want {
					t.Fatalf("key %q acknowledged on partition %d, sarama's hash partitioner says %d", r.Key, r.Partition, want)
				}
				used[r.Partition] = true
			}
			if len(used) != partitions {
				t.Fatalf("60 keys landed on %d partitions, want all %d", len(used), partitions)
			}
			for p, want := range byPartition(t, recs) {
				got := saramaConsume(t, n.KafkaAddr, topic, p, sarama.OffsetOldest, len(want))
				for i, m := range got {
					if m.Partition != p {
						t.Fatalf("consumer of partition %d got a message of partition %d", p, m.Partition)
					}
					checkRecord(t, fmt.Sprintf("sarama read of %s/%d", topic, p), want[i], m.Key, m.Value, fromSaramaHeaders(m.Headers), m.Timestamp, m.Offset)
				}
			}
			// The same bytes read by another client.
			franzVerifyPartitions(t, n.KafkaAddr, topic, recs)
		})
	}
}

// TestSaramaOffsetsAndTime reads from arbitrary offsets and resolves
// timestamps to offsets with Client.GetOffset (ListOffsets).
func TestSaramaOffsetsAndTime(t *testing.T) {
	n := StartNode(t)
	topic := uniqueTopic("sarama-offsets")
	saramaCreateTopic(t, n.KafkaAddr, topic, 1)
	recs := makeRecords("t", 60, recentBase())
	base := recs[0].Timestamp
	for i := range recs {
		recs[i].Timestamp = base.Add(time.Duration(i) * 10 * time.Millisecond)
	}
	saramaProduce(t, n.KafkaAddr, topic, "none", recs[:30], 1)  // one message per batch
	saramaProduce(t, n.KafkaAddr, topic, "zstd", recs[30:], 15) // several per batch
	for i, r := range recs {
		if r.Offset != int64(i) || r.Partition != 0 {
			t.Fatalf("record %d acknowledged at %d/%d, want 0/%d", i, r.Partition, r.Offset, i)
		}
	}

	for _, from := range []int64{0, 13, 29, 30, 44, 59} {
		got := saramaConsume(t, n.KafkaAddr, topic, 0, from, 1)
		checkRecord(t, fmt.Sprintf("sarama read from offset %d", from), recs[from], got[0].Key, got[0].Value, fromSaramaHeaders(got[0].Headers), got[0].Timestamp, got[0].Offset)
	}

	client, err := sarama.NewClient([]string{n.KafkaAddr}, saramaConfig("none"))
	if err != nil {
		t.Fatalf("sarama client: %v", err)
	}
	defer client.Close()
	for _, c := range []struct {
		name string
		at   int64
		want int64
	}{
		{"oldest", sarama.OffsetOldest, 0},
		{"newest", sarama.OffsetNewest, 60},
		{"before all", base.UnixMilli() - 5000, 0},
		{"exact first", base.UnixMilli(), 0},
		{"between single batches", base.UnixMilli() + 10*12 - 7, 12},
		{"inside a batch", base.UnixMilli() + 10*37 - 2, 37},
		{"exact last", base.UnixMilli() + 10*59, 59},
	} {
		got, err := client.GetOffset(topic, 0, c.at)
		if err != nil {
			t.Errorf("GetOffset(%s): %v", c.name, err)
			continue
		}
		if got != c.want {
			t.Errorf("GetOffset(%s) = %d, want %d", c.name, got, c.want)
		}
	}
}
