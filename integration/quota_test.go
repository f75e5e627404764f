package integration

// Client quotas with real processes: a producer_byte_rate set through one
// node with the spool CLI holds a producer on another node, which serves
// a producer without a quota beside it at full speed.

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
)

func TestQuotaProducerAcrossProcesses(t *testing.T) {
	const rate = 1 << 20
	// 11 samples of 100 ms: the rate settles within a test's seconds.
	nodes := startCluster(t, 2, WithArgs("--quota-window-size", "100ms"))
	const topic = "quota-int"
	if out, err := Spool(t, "", "topic", "create", topic, "--brokers", nodes[0].KafkaAddr); err != nil {
		t.Fatalf("create topic: %v\n%s", err, out)
	}
	waitTopicEverywhere(t, nodes, topic)
	_, parts := metadata(t, nodes[0], topic)
	leader, other := nodes[0], nodes[1]
	if parts[0].Leader == int32(nodes[1].ID) {
		leader, other = nodes[1], nodes[0]
	}
	// Set through the node that does not lead; the leader must enforce it.
	if out, err := Spool(t, "", "quota", "set", "--client-id", "slow", "--add-config", fmt.Sprintf("producer_byte_rate=%d", rate),
		"--brokers", other.KafkaAddr); err != nil {
		t.Fatalf("quota set: %v\n%s", err, out)
	}
	retry.Run(t, 10*time.Second, func() error {
		out, err := Spool(t, "", "quota", "list", "--client-id", "slow", "--brokers", leader.KafkaAddr)
		if err != nil || !strings.Contains(out, fmt.Sprintf("producer_byte_rate=%d", rate)) {
			return fmt.Errorf("the leader lists %q (%v)", out, err)
		}
		return nil
	})

	produce := func(clientID string, stop <-chan struct{}, acked *atomic.Int64, wg *sync.WaitGroup) {
		defer wg.Done()
		cl := franzClient(t, leader.KafkaAddr, kgo.ClientID(clientID), kgo.DefaultProduceTopic(topic),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(64<<10), kgo.MaxBufferedRecords(32))
		value := make([]byte, 16<<10)
		rand.Read(value)
		for {
			select {
			case <-stop:
				return
			default:
			}
			cl.Produce(context.Background(), &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
				if err == nil {
					acked.Add(int64(len(r.Value)))
				}
			})
		}
	}
	var slow, fast atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	start := time.Now()
	go produce("slow", stop, &slow, &wg)
	go produce("fast", stop, &fast, &wg)
	time.Sleep(5 * time.Second)
	s, f := slow.Load(), fast.Load()
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()
	ratio := float64(s) / (rate * elapsed.Seconds())
	t.Logf("in %v: slow acked %d bytes (%.2f× its quota), fast %d (%.1f MiB/s)", elapsed, s, ratio, f, float64(f)/elapsed.Seconds()/(1<<20))
	// The window lets an idle client send 1 s worth at once: about 1.2×
	// over 5 s.
	if ratio > 1.35 || ratio < 0.5 {
		t.Errorf("the throttled producer got %.2f× its quota through in %v, want about 1", ratio, elapsed)
	}
	if float64(f) < 3*rate*elapsed.Seconds() {
		t.Errorf("the producer without a quota got %d bytes through in %v: held back", f, elapsed)
	}
}

// A consumer with a consumer_byte_rate reading a large topic from the
// beginning is held to about its quota by a real node, while a consumer
// without one reads the whole topic at once.
func TestQuotaConsumerFromTheBeginning(t *testing.T) {
	const rate = 1 << 20
	n := StartNode(t, WithArgs("--quota-window-size", "100ms"))
	const topic = "quota-int-fetch"
	if out, err := Spool(t, "", "topic", "create", topic, "--brokers", n.KafkaAddr); err != nil {
		t.Fatalf("create topic: %v\n%s", err, out)
	}
	pr := franzClient(t, n.KafkaAddr, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(64<<10))
	var recs []*kgo.Record
	for range 1536 { // 24 MiB, stored as sent
		v := make([]byte, 16<<10)
		rand.Read(v)
		recs = append(recs, &kgo.Record{Value: v})
	}
	if err := pr.ProduceSync(ctxTimeout(t, 60*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if out, err := Spool(t, "", "quota", "set", "--client-id", "slowc", "--add-config", fmt.Sprintf("consumer_byte_rate=%d", rate),
		"--brokers", n.KafkaAddr); err != nil {
		t.Fatalf("quota set: %v\n%s", err, out)
	}
	consume := func(clientID string, d time.Duration) int64 {
		cl := franzClient(t, n.KafkaAddr, kgo.ClientID(clientID), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxPartitionBytes(256<<10))
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		var got int64
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got += int64(len(r.Value)) })
		}
		return got
	}
	start := time.Now()
	slow := consume("slowc", 5*time.Second)
	elapsed := time.Since(start)
	fast := consume("fastc", 5*time.Second)
	ratio := float64(slow) / (rate * elapsed.Seconds())
	t.Logf("in %v: slowc read %d bytes (%.2f× its quota); fastc %d", elapsed, slow, ratio, fast)
	if ratio > 1.35 || ratio < 0.5 {
		t.Errorf("the throttled consumer read %.2f× its quota in %v, want about 1", ratio, elapsed)
	}
	if fast != int64(len(recs))*16<<10 {
		t.Errorf("the consumer without a quota read %d bytes in 5 s, want the whole topic", fast)
	}
}
