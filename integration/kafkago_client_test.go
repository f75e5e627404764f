package integration

// kafka-go's Client (the request/response API under kafka-go's admin
// helpers): its Fetch sends SessionID -1 with SessionEpoch -1, a sessionless
// full fetch, which Spool once refused with FETCH_SESSION_ID_NOT_FOUND.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// kafkaGoClientFetch fetches one partition from offset with Client.Fetch and
// returns its records.
func kafkaGoClientFetch(t testing.TB, addr, topic string, partition int, offset int64) (*kafka.FetchResponse, []*kafka.Message) {
	t.Helper()
	transport := &kafka.Transport{}
	defer transport.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second, Transport: transport}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := cl.Fetch(ctx, &kafka.FetchRequest{
		Topic: topic, Partition: partition, Offset: offset,
		MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("kafka-go Client.Fetch %s/%d at %d: %v", topic, partition, offset, err)
	}
	if resp.Error != nil {
		t.Fatalf("kafka-go Client.Fetch %s/%d at %d: partition error %v", topic, partition, offset, resp.Error)
	}
	var out []*kafka.Message
	for {
		r, err := resp.Records.ReadRecord()
		if errors.Is(err, io.EOF) {
			return resp, out
		}
		if err != nil {
			t.Fatalf("kafka-go Client.Fetch %s/%d: read record %d: %v", topic, partition, len(out), err)
		}
		m := &kafka.Message{Topic: topic, Partition: partition, Offset: r.Offset, Time: r.Time}
		if r.Key != nil {
			if m.Key, err = io.ReadAll(r.Key); err != nil {
				t.Fatal(err)
			}
		}
		if r.Value != nil {
			if m.Value, err = io.ReadAll(r.Value); err != nil {
				t.Fatal(err)
			}
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		out = append(out, m)
	}
}

// TestKafkaGoClientFetch reads records with Client.Fetch, from the start and
// from the middle, and gets an empty record set from an empty topic.
func TestKafkaGoClientFetch(t *testing.T) {
	n := StartNode(t)
	topic := uniqueTopic("kafkago-client")
	kafkaGoCreateTopic(t, n.KafkaAddr, topic, 1)
	recs := makeRecords("client", 30, recentBase())
	kafkaGoWrite(t, n.KafkaAddr, topic, "none", recs, 10)

	for _, from := range []int64{0, 17} {
		resp, got := kafkaGoClientFetch(t, n.KafkaAddr, topic, 0, from)
		if resp.HighWatermark != int64(len(recs)) {
			t.Fatalf("high watermark %d, want %d", resp.HighWatermark, len(recs))
		}
		// A fetch returns whole batches: the one holding from may start
		// before it.
		for len(got) > 0 && got[0].Offset < from {
			got = got[1:]
		}
		if len(got) != len(recs)-int(from) {
			t.Fatalf("fetch from %d: %d records, want %d", from, len(got), len(recs)-int(from))
		}
		for i, m := range got {
			checkRecord(t, fmt.Sprintf("Client.Fetch of %s from %d", topic, from), recs[int(from)+i], m.Key, m.Value, fromKafkaGoHeaders(m.Headers), m.Time, m.Offset)
		}
	}

	empty := uniqueTopic("kafkago-client-empty")
	kafkaGoCreateTopic(t, n.KafkaAddr, empty, 1)
	resp, got := kafkaGoClientFetch(t, n.KafkaAddr, empty, 0, 0)
	if len(got) != 0 || resp.HighWatermark != 0 {
		t.Fatalf("empty topic: %d records, high watermark %d", len(got), resp.HighWatermark)
	}
}

// TestKafkaGoClientCreateTopicsAssigned creates topics through Client with
// ReplicaAssignments: one on this node is created with the partitions
// asked; one naming a broker that does not exist is refused with
// INVALID_REPLICA_ASSIGNMENT.
func TestKafkaGoClientCreateTopicsAssigned(t *testing.T) {
	n := StartNode(t)
	transport := &kafka.Transport{}
	defer transport.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(n.KafkaAddr), Timeout: 10 * time.Second, Transport: transport}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	good, bad := uniqueTopic("kafkago-assigned"), uniqueTopic("kafkago-misassigned")
	resp, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: good, NumPartitions: -1, ReplicationFactor: -1, ReplicaAssignments: []kafka.ReplicaAssignment{
			{Partition: 0, Replicas: []int{n.ID}}, {Partition: 1, Replicas: []int{n.ID}}, {Partition: 2, Replicas: []int{n.ID}},
		}},
		{Topic: bad, NumPartitions: -1, ReplicationFactor: -1, ReplicaAssignments: []kafka.ReplicaAssignment{
			{Partition: 0, Replicas: []int{n.ID + 100}},
		}},
	}})
	if err != nil {
		t.Fatalf("kafka-go CreateTopics: %v", err)
	}
	if err := resp.Errors[good]; err != nil {
		t.Fatalf("create %s: %v", good, err)
	}
	if err := resp.Errors[bad]; !errors.Is(err, kafka.InvalidReplicaAssignment) {
		t.Fatalf("create %s naming broker %d: %v, want INVALID_REPLICA_ASSIGNMENT", bad, n.ID+100, err)
	}
	_, parts := metadata(t, n, good)
	if len(parts) != 3 {
		t.Fatalf("%s has %d partitions, want 3", good, len(parts))
	}
	for p, pm := range parts {
		if pm.ErrorCode != 0 || pm.Leader != int32(n.ID) || len(pm.Replicas) != 1 {
			t.Errorf("%s/%d: %+v", good, p, pm)
		}
	}
}
