package integration

// segmentio/kafka-go against a real node: its Writer and group-less Reader
// (the newer protocol package underneath), and its Conn API, which hard-codes
// older versions (CreateTopics v0–2, Produce v2/3/7, Fetch v2/5/10,
// ListOffsets v1, Metadata v1/6).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

func kafkaGoCodec(name string) kafka.Compression {
	switch name {
	case "gzip":
		return kafka.Gzip
	case "snappy":
		return kafka.Snappy
	case "lz4":
		return kafka.Lz4
	case "zstd":
		return kafka.Zstd
	}
	return 0
}

func toKafkaGoMessage(r testRecord) kafka.Message {
	m := kafka.Message{Key: r.Key, Value: r.Value, Time: r.Timestamp}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: []byte(h.Value)})
	}
	return m
}

func fromKafkaGoHeaders(hs []kafka.Header) []testHeader {
	out := make([]testHeader, 0, len(hs))
	for _, h := range hs {
		out = append(out, testHeader{Key: h.Key, Value: string(h.Value)})
	}
	return out
}

// kafkaGoCreateTopic creates a topic through Conn.CreateTopics on the
// controller the node names.
func kafkaGoCreateTopic(t testing.TB, addr, topic string, partitions int) {
	t.Helper()
	conn, err := kafka.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("kafka-go dial %s: %v", addr, err)
	}
	defer conn.Close()
	controller, err := conn.Controller()
	if err != nil {
		t.Fatalf("kafka-go controller: %v", err)
	}
	if controller.Port == 0 {
		t.Fatalf("kafka-go controller: metadata names no controller: %+v", controller)
	}
	cc, err := kafka.Dial("tcp", fmt.Sprintf("%s:%d", controller.Host, controller.Port))
	if err != nil {
		t.Fatalf("kafka-go dial controller %+v: %v", controller, err)
	}
	defer cc.Close()
	err = cc.CreateTopics(kafka.TopicConfig{
		Topic:             topic,
		NumPartitions:     partitions,
		ReplicationFactor: 1,
		ConfigEntries:     []kafka.ConfigEntry{{ConfigName: "retention.ms", ConfigValue: "3600000"}},
	})
	if err != nil {
		t.Fatalf("kafka-go create topic %s: %v", topic, err)
	}
	parts, err := cc.ReadPartitions(topic)
	if err != nil {
		t.Fatalf("kafka-go read partitions of %s: %v", topic, err)
	}
	if len(parts) != partitions {
		t.Fatalf("kafka-go: %s has %d partitions, want %d", topic, len(parts), partitions)
	}
}

// kafkaGoWrite produces recs with a Writer (acks=all, hash balancer) and
// records where each was acknowledged, from the Writer's Completion.
func kafkaGoWrite(t testing.TB, addr, topic, codec string, recs []testRecord, perBatch int) {
	t.Helper()
	var mu sync.Mutex
	acked := map[string]kafka.Message{}
	// A Transport of its own: the shared default one caches metadata for
	// seconds and would not know the topic just created.
	transport := &kafka.Transport{MetadataTTL: time.Second}
	defer transport.CloseIdleConnections()
	w := &kafka.Writer{
		Addr:         kafka.TCP(addr),
		Transport:    transport,
		Topic:        topic,
		Balancer:     &kafka.Hash{},
		BatchSize:    perBatch,
		BatchTimeout: 5 * time.Millisecond,
		RequiredAcks: kafka.RequireAll,
		Compression:  kafkaGoCodec(codec),
		MaxAttempts:  3,
		Completion: func(msgs []kafka.Message, err error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				if err == nil {
					acked[string(m.Key)] = m
				}
			}
		},
	}
	defer w.Close()
	for start := 0; start < len(recs); start += perBatch {
		end := min(start+perBatch, len(recs))
		msgs := make([]kafka.Message, 0, end-start)
		for i := start; i < end; i++ {
			msgs = append(msgs, toKafkaGoMessage(recs[i]))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := w.WriteMessages(ctx, msgs...)
		cancel()
		if err != nil {
			t.Fatalf("kafka-go write (%s) to %s: %v", codec, topic, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range recs {
		m, ok := acked[string(recs[i].Key)]
		if !ok {
			t.Fatalf("kafka-go writer: no completion for key %q", recs[i].Key)
		}
		recs[i].Partition, recs[i].Offset = int32(m.Partition), m.Offset
	}
}

// kafkaGoRead reads n messages of one partition from offset with a Reader
// that has no GroupID.
func kafkaGoRead(t testing.TB, addr, topic string, partition int, offset int64, n int) []kafka.Message {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:   []string{addr},
		Topic:     topic,
		Partition: partition,
		MinBytes:  1,
		MaxBytes:  10 << 20,
		MaxWait:   250 * time.Millisecond,
	})
	defer r.Close()
	if err := r.SetOffset(offset); err != nil {
		t.Fatalf("kafka-go reader set offset %d: %v", offset, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := make([]kafka.Message, 0, n)
	for len(out) < n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("kafka-go read %s/%d from %d: %v after %d of %d messages", topic, partition, offset, err, len(out), n)
		}
		out = append(out, m)
	}
	return out
}

// TestKafkaGoRoundTrip creates a 3-partition topic with Conn.CreateTopics
// and, for every codec, writes keyed messages with headers and CreateTimes
// with a Writer, then reads each partition back with a Reader.
func TestKafkaGoRoundTrip(t *testing.T) {
	n := StartNode(t)
	const partitions = 3
	for _, codec := range codecNames {
		t.Run(codec, func(t *testing.T) {
			topic := uniqueTopic("kafkago-" + codec)
			kafkaGoCreateTopic(t, n.KafkaAddr, topic, partitions)
			recs := makeRecords(codec, 60, recentBase())
			kafkaGoWrite(t, n.KafkaAddr, topic, codec, recs, 20)

			used := map[int32]bool{}
			for _, r := range recs {
				want := (&kafka.Hash{}).Balance(toKafkaGoMessage(r), 0, 1, 2)
				if r.Partition != int32(want) {
					t.Fatalf("key %q acknowledged on partition %d, kafka-go's hash balancer says %d", r.Key, r.Partition, want)
				}
				used[r.Partition] = true
			}
			if len(used) != partitions {
				t.Fatalf("60 keys landed on %d partitions, want all %d", len(used), partitions)
			}
			for p, want := range byPartition(t, recs) {
				got := kafkaGoRead(t, n.KafkaAddr, topic, int(p), kafka.FirstOffset, len(want))
				for i, m := range got {
					checkRecord(t, fmt.Sprintf("kafka-go read of %s/%d", topic, p), want[i], m.Key, m.Value, fromKafkaGoHeaders(m.Headers), m.Time, m.Offset)
				}
			}
			franzVerifyPartitions(t, n.KafkaAddr, topic, recs)
		})
	}
}

// TestKafkaGoOffsetsAndTime reads from arbitrary offsets with a Reader and
// positions one by time with SetOffsetAt.
func TestKafkaGoOffsetsAndTime(t *testing.T) {
	n := StartNode(t)
	topic := uniqueTopic("kafkago-offsets")
	kafkaGoCreateTopic(t, n.KafkaAddr, topic, 1)
	recs := makeRecords("t", 60, recentBase())
	base := recs[0].Timestamp
	for i := range recs {
		recs[i].Timestamp = base.Add(time.Duration(i) * 10 * time.Millisecond)
	}
	kafkaGoWrite(t, n.KafkaAddr, topic, "none", recs[:30], 1)
	kafkaGoWrite(t, n.KafkaAddr, topic, "lz4", recs[30:], 15)
	for i, r := range recs {
		if r.Offset != int64(i) || r.Partition != 0 {
			t.Fatalf("record %d acknowledged at %d/%d, want 0/%d", i, r.Partition, r.Offset, i)
		}
	}
	for _, from := range []int64{0, 7, 29, 30, 52, 59} {
		got := kafkaGoRead(t, n.KafkaAddr, topic, 0, from, 1)
		checkRecord(t, fmt.Sprintf("kafka-go read from offset %d", from), recs[from], got[0].Key, got[0].Value, fromKafkaGoHeaders(got[0].Headers), got[0].Time, got[0].Offset)
	}

	for _, k := range []int{0, 21, 44} {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{n.KafkaAddr}, Topic: topic, MaxWait: 250 * time.Millisecond})
		ctx := ctxTimeout(t, 30*time.Second)
		if err := r.SetOffsetAt(ctx, base.Add(time.Duration(10*k-3)*time.Millisecond)); err != nil {
			r.Close()
			t.Fatalf("kafka-go SetOffsetAt(record %d's time - 3ms): %v", k, err)
		}
		m, err := r.ReadMessage(ctx)
		r.Close()
		if err != nil {
			t.Fatalf("kafka-go read after SetOffsetAt: %v", err)
		}
		if m.Offset != int64(k) {
			t.Errorf("kafka-go SetOffsetAt(record %d's time - 3ms) started at offset %d, want %d", k, m.Offset, k)
		}
	}
}

// TestKafkaGoConn drives kafka-go's low-level Conn, which pins old request
// versions: produce with each codec, offsets by position and by time, seek
// and batch reads.
func TestKafkaGoConn(t *testing.T) {
	n := StartNode(t)
	topic := uniqueTopic("kafkago-conn")
	kafkaGoCreateTopic(t, n.KafkaAddr, topic, 1)

	conn, err := kafka.DialLeader(ctxTimeout(t, 10*time.Second), "tcp", n.KafkaAddr, topic, 0)
	if err != nil {
		t.Fatalf("kafka-go dial leader: %v", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(60 * time.Second))

	base := recentBase()
	var recs []testRecord
	for ci, codec := range codecNames {
		chunk := makeRecords(codec, 10, base.Add(time.Duration(ci)*time.Second))
		msgs := make([]kafka.Message, len(chunk))
		for i, r := range chunk {
			msgs[i] = toKafkaGoMessage(r)
		}
		var err error
		if codec == "none" {
			_, err = conn.WriteMessages(msgs...)
		} else {
			_, err = conn.WriteCompressedMessages(kafkaGoCodec(codec).Codec(), msgs...)
		}
		if err != nil {
			t.Fatalf("kafka-go conn write (%s): %v", codec, err)
		}
		for i := range chunk {
			chunk[i].Offset = int64(len(recs) + i)
		}
		recs = append(recs, chunk...)
	}

	first, last, err := conn.ReadOffsets()
	if err != nil {
		t.Fatalf("kafka-go conn read offsets: %v", err)
	}
	if first != 0 || last != int64(len(recs)) {
		t.Errorf("kafka-go conn offsets = [%d, %d), want [0, %d)", first, last, len(recs))
	}
	// Each codec's chunk starts one second after the previous one's.
	for ci := range codecNames {
		at := base.Add(time.Duration(ci)*time.Second - time.Millisecond)
		off, err := conn.ReadOffset(at)
		if err != nil {
			t.Fatalf("kafka-go conn ReadOffset(%v): %v", at, err)
		}
		if off != int64(10*ci) {
			t.Errorf("kafka-go conn ReadOffset(chunk %d start - 1ms) = %d, want %d", ci, off, 10*ci)
		}
	}

	for _, from := range []int64{0, 9, 10, 23, 37, 49} {
		if _, err := conn.Seek(from, kafka.SeekAbsolute); err != nil {
			t.Fatalf("kafka-go conn seek %d: %v", from, err)
		}
		batch := conn.ReadBatch(1, 10<<20)
		for i := from; i < int64(len(recs)); {
			m, err := batch.ReadMessage()
			if err != nil {
				if errors.Is(err, kafka.RequestTimedOut) || i > from {
					break // the batch ended; what was read is checked
				}
				t.Fatalf("kafka-go conn read from %d: %v", from, err)
			}
			checkRecord(t, fmt.Sprintf("kafka-go conn read from %d", from), recs[i], m.Key, m.Value, fromKafkaGoHeaders(m.Headers), m.Time, m.Offset)
			i++
		}
		if err := batch.Close(); err != nil {
			t.Fatalf("kafka-go conn batch from %d: %v", from, err)
		}
	}
}
