package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"

	"github.com/spool-log/spool/internal/retry"
)

// saramaHandler records what one sarama group member is assigned and marks
// every message it reads.
type saramaHandler struct {
	mu    sync.Mutex
	owned []int32
	read  int
}

func (h *saramaHandler) Setup(s sarama.ConsumerGroupSession) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.owned = slices.Clone(s.Claims()["sarama-topic"])
	slices.Sort(h.owned)
	return nil
}

func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.owned = nil
	return nil
}

func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		s.MarkMessage(m, "")
		h.mu.Lock()
		h.read++
		h.mu.Unlock()
	}
	return nil
}

func (h *saramaHandler) get() ([]int32, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.owned), h.read
}

// runSaramaMember consumes in a loop (sarama returns from Consume at every
// rebalance) until ctx ends, then closes the group, which leaves it.
func runSaramaMember(t *testing.T, ctx context.Context, addr string, h *saramaHandler) chan struct{} {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 50 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 100 * time.Millisecond
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cg, err := sarama.NewConsumerGroup([]string{addr}, "sarama-group", cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cg.Close()
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{"sarama-topic"}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) && ctx.Err() == nil {
				t.Logf("sarama consume: %v", err)
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()
	return done
}

func TestSaramaConsumerGroup(t *testing.T) {
	n := startNode(t, groupTestConfig(t, t.TempDir()))
	createTopic(t, newAdmin(t, n), "sarama-topic", 4, nil)
	produceTo(t, n, "sarama-topic", 4, 5, 0)

	var a, b saramaHandler
	ctxA, stopA := context.WithCancel(context.Background())
	defer stopA()
	doneA := runSaramaMember(t, ctxA, n.KafkaAddr(), &a)
	retry.Run(t, 20*time.Second, func() error {
		if owned, read := a.get(); len(owned) != 4 || read != 20 {
			return fmt.Errorf("sole member owns %v and read %d of 20", owned, read)
		}
		return nil
	})
	ctxB, stopB := context.WithCancel(context.Background())
	doneB := runSaramaMember(t, ctxB, n.KafkaAddr(), &b)
	retry.Run(t, 20*time.Second, func() error {
		oa, _ := a.get()
		ob, _ := b.get()
		if len(oa) != 2 || len(ob) != 2 || slices.ContainsFunc(oa, func(p int32) bool { return slices.Contains(ob, p) }) {
			return fmt.Errorf("members own %v and %v", oa, ob)
		}
		return nil
	})
	// The committed offsets kept the second member from re-reading.
	if _, read := b.get(); read != 0 {
		t.Fatalf("second member re-read %d committed records", read)
	}
	stopB()
	<-doneB
	retry.Run(t, 20*time.Second, func() error {
		if owned, _ := a.get(); len(owned) != 4 {
			return fmt.Errorf("remaining member owns %v", owned)
		}
		return nil
	})
	stopA()
	<-doneA
}

// TestKafkaGoReaderGroup drives kafka-go's Reader with a GroupID, which
// speaks the oldest versions (JoinGroup v2, SyncGroup v0, OffsetCommit v2,
// OffsetFetch v1), and resumes from its commit in a second reader.
func TestKafkaGoReaderGroup(t *testing.T) {
	n := startNode(t, groupTestConfig(t, t.TempDir()))
	createTopic(t, newAdmin(t, n), "kgo-topic", 2, nil)
	produceTo(t, n, "kgo-topic", 2, 10, 0)

	newReader := func() *kafka.Reader {
		return kafka.NewReader(kafka.ReaderConfig{
			Brokers:           []string{n.KafkaAddr()},
			GroupID:           "kafka-go-group",
			Topic:             "kgo-topic",
			StartOffset:       kafka.FirstOffset,
			MaxWait:           100 * time.Millisecond,
			HeartbeatInterval: 100 * time.Millisecond,
			SessionTimeout:    time.Second,
			RebalanceTimeout:  2 * time.Second,
		})
	}
	ctx := testCtx(t)
	seen := make(map[string]bool)
	r := newReader()
	for range 12 {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		if err := r.CommitMessages(ctx, m); err != nil {
			t.Fatalf("commit: %v", err)
		}
		seen[fmt.Sprintf("%d/%d", m.Partition, m.Offset)] = true
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	r = newReader()
	defer r.Close()
	for len(seen) < 20 {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("fetch after resume (%d of 20 seen): %v", len(seen), err)
		}
		key := fmt.Sprintf("%d/%d", m.Partition, m.Offset)
		if seen[key] {
			t.Fatalf("record %s read again after its commit", key)
		}
		seen[key] = true
	}
}
