package integration

// Fetches move record bytes from segment files to sockets with sendfile(2):
// the node's /v1/stats counts sendfile_bytes and copy_bytes, and consuming a
// few MB with each client must grow the first and leave the second alone.

import (
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// fetchCounters reads the sendfile and copy byte counters.
func fetchCounters(t testing.TB, n *Node) (sendfile, copied int64) {
	t.Helper()
	st := n.Stats(t)
	sf, ok1 := st["sendfile_bytes"].(float64)
	cp, ok2 := st["copy_bytes"].(float64)
	if !ok1 || !ok2 {
		t.Fatalf("/v1/stats lacks numeric sendfile_bytes and copy_bytes: %v", st)
	}
	return int64(sf), int64(cp)
}

func TestSendfileFetch(t *testing.T) {
	n := StartNode(t)
	topic := uniqueTopic("sendfile")
	franzCreateTopic(t, n.KafkaAddr, topic, 1)

	// 4 MiB of incompressible 1 KiB values, uncompressed, in ~512 KiB batches.
	const count, size = 4096, 1024
	values := make([][]byte, count)
	for i := range values {
		values[i] = make([]byte, size)
		rand.Read(values[i])
	}
	cl := franzClient(t, n.KafkaAddr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	for start := 0; start < count; start += 512 {
		var recs []*kgo.Record
		for i := start; i < start+512; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Value: values[i]})
		}
		if err := cl.ProduceSync(ctxTimeout(t, 30e9), recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	const minBytes = int64(count * size) // the values alone; batches add framing

	consumers := []struct {
		name    string
		consume func() error
	}{
		{"franz-go", func() error {
			got := franzConsume(t, n.KafkaAddr, topic, 0, kgo.NewOffset().AtStart(), count)
			for i, r := range got {
				if string(r.Value) != string(values[i]) {
					return fmt.Errorf("offset %d: wrong value", r.Offset)
				}
			}
			return nil
		}},
		{"sarama", func() error {
			got := saramaConsume(t, n.KafkaAddr, topic, 0, sarama.OffsetOldest, count)
			for i, m := range got {
				if string(m.Value) != string(values[i]) {
					return fmt.Errorf("offset %d: wrong value", m.Offset)
				}
			}
			return nil
		}},
		{"kafka-go", func() error {
			got := kafkaGoRead(t, n.KafkaAddr, topic, 0, kafka.FirstOffset, count)
			for i, m := range got {
				if string(m.Value) != string(values[i]) {
					return fmt.Errorf("offset %d: wrong value", m.Offset)
				}
			}
			return nil
		}},
	}
	for _, c := range consumers {
		sf0, cp0 := fetchCounters(t, n)
		if err := c.consume(); err != nil {
			t.Fatalf("%s consume: %v", c.name, err)
		}
		sf1, cp1 := fetchCounters(t, n)
		t.Logf("%s: sendfile_bytes +%d, copy_bytes +%d for %d value bytes", c.name, sf1-sf0, cp1-cp0, minBytes)
		if sf1-sf0 < minBytes {
			t.Errorf("%s consumed %d value bytes but sendfile_bytes grew only %d", c.name, minBytes, sf1-sf0)
		}
		if cp1 != cp0 {
			t.Errorf("%s: copy_bytes grew by %d; fetches should not copy through user space", c.name, cp1-cp0)
		}
	}
}
