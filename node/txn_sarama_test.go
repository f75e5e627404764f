package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnSaramaProducer: sarama's transactional producer (its own
// InitProducerId, AddPartitionsToTxn, EndTxn, and AddOffsetsToTxn /
// TxnOffsetCommit through AddMessageToTxn) commits one transaction and
// aborts another; read_committed (franz-go and sarama's own consumer)
// sees the committed records only, and the group's offset, committed in
// the transaction, is visible after the commit.
func TestTxnSaramaProducer(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	createTopic(t, adm, "sarama-txn", 2, nil)
	createTopic(t, adm, "sarama-txn-in", 1, nil)
	ctx := testCtx(t)
	if err := newClient(t, n).ProduceSync(ctx, &kgo.Record{Topic: "sarama-txn-in", Value: []byte("in")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Transaction.ID = "sarama-tx"
	cfg.Producer.Transaction.Retry.Max = 20
	cfg.Producer.Transaction.Retry.Backoff = 50 * time.Millisecond
	cfg.Net.MaxOpenRequests = 1
	prod, err := sarama.NewSyncProducer([]string{n.KafkaAddr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	send := func(prefix string, count int) {
		t.Helper()
		for i := range count {
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "sarama-txn", Key: sarama.StringEncoder(fmt.Sprintf("%s-%d", prefix, i)), Value: sarama.StringEncoder(prefix)}); err != nil {
				t.Fatalf("send %s-%d: %v", prefix, i, err)
			}
		}
	}
	if err := prod.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	send("commit", 10)
	offsets := map[string][]*sarama.PartitionOffsetMetadata{"sarama-txn-in": {{Partition: 0, Offset: 1}}}
	if err := prod.AddOffsetsToTxn(offsets, "sarama-txn-group"); err != nil {
		t.Fatalf("add offsets: %v", err)
	}
	if err := prod.CommitTxn(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := prod.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	send("abort", 10)
	if err := prod.AbortTxn(); err != nil {
		t.Fatalf("abort: %v", err)
	}

	got := readKeys(t, n, "sarama-txn", 10, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if len(got) != 10 {
		t.Fatalf("read_committed saw %v", got)
	}
	for k, c := range got {
		if c != 1 || k[:6] != "commit" {
			t.Fatalf("read_committed saw %q %d times", k, c)
		}
	}
	// sarama's own read_committed consumer, to the end: the ten, no more.
	ccfg := sarama.NewConfig()
	ccfg.Version = sarama.V2_8_0_0
	ccfg.Consumer.IsolationLevel = sarama.ReadCommitted
	cons, err := sarama.NewConsumer([]string{n.KafkaAddr()}, ccfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := 0
	for p := range int32(2) {
		pc, err := cons.ConsumePartition("sarama-txn", p, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
	read:
		for {
			select {
			case m := <-pc.Messages():
				if string(m.Value) != "commit" {
					t.Fatalf("sarama read_committed saw %s=%s", m.Key, m.Value)
				}
				seen++
			case <-time.After(time.Second):
				break read
			}
		}
		pc.Close()
	}
	if seen != 10 {
		t.Fatalf("sarama read_committed saw %d records, want 10", seen)
	}
	o, err := adm.FetchOffsets(ctx, "sarama-txn-group")
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := o.Lookup("sarama-txn-in", 0); !ok || r.At != 1 {
		t.Fatalf("transactional offset commit: %+v %v", r, ok)
	}
}
