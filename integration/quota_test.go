package integration

// Client quotas with real processes (issue 28): a producer_byte_rate set
// through one node with the spool CLI holds a producer on another node to
// within 10 % over 10 s, while a producer without a quota beside it keeps
// its speed; a consumer_byte_rate holds a consumer reading a large topic
// from the beginning the same way. quota_limits_test.go has the other
// kinds of quota, and restarts.

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
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
	// paused holds the throttled producer back (no new records) while the
	// unthrottled one is measured alone.
	var paused atomic.Bool
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
			if clientID == "slow" && paused.Load() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			cl.Produce(context.Background(), &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
				if err == nil {
					acked.Add(int64(len(r.Value)))
				}
			})
		}
	}
	var slow, fast atomic.Int64
	var wg, slowWG sync.WaitGroup
	stopFast, stopSlow := make(chan struct{}), make(chan struct{})
	stopSlowOnce := sync.OnceFunc(func() { close(stopSlow); slowWG.Wait() })
	defer func() {
		stopSlowOnce()
		close(stopFast)
		wg.Wait()
	}()
	// The unthrottled producer alone, before and after the throttled one
	// runs beside it: what "not slowed" is measured against is the mean of
	// the two, in the same minutes of the machine (its disk's writeback
	// slows every writer as the run goes on, throttled neighbour or not).
	rateOf := func(d time.Duration) float64 {
		f0, t0 := fast.Load(), time.Now()
		time.Sleep(d)
		return float64(fast.Load()-f0) / time.Since(t0).Seconds()
	}
	wg.Add(1)
	go produce("fast", stopFast, &fast, &wg)
	time.Sleep(time.Second) // warm up: connections, metadata, first batches
	aloneBefore := rateOf(3 * time.Second)

	// Set through the node that does not lead; the leader must enforce it
	// within a few seconds.
	set := time.Now()
	if out, err := Spool(t, "", "quota", "set", "--client-id", "slow", "--add-config", fmt.Sprintf("producer_byte_rate=%d", rate),
		"--brokers", other.KafkaAddr); err != nil {
		t.Fatalf("quota set: %v\n%s", err, out)
	}
	retry.Run(t, 5*time.Second, func() error {
		out, err := Spool(t, "", "quota", "list", "--client-id", "slow", "--brokers", leader.KafkaAddr)
		if err != nil || !strings.Contains(out, fmt.Sprintf("producer_byte_rate=%d", rate)) {
			return fmt.Errorf("the leader lists %q (%v)", out, err)
		}
		return nil
	})
	t.Logf("the leader has the quota set through the other node %v after it was set", time.Since(set).Round(time.Millisecond))

	slowWG.Add(1)
	go produce("slow", stopSlow, &slow, &slowWG)
	// A client new to a rate may send the window's worth at once (Kafka's
	// padding of a young rate): measure from 2 s on, for 10 s.
	time.Sleep(2 * time.Second)
	s0, f1, t1 := slow.Load(), fast.Load(), time.Now()
	time.Sleep(10 * time.Second)
	elapsed := time.Since(t1)
	s, f := slow.Load()-s0, fast.Load()-f1
	ratio := float64(s) / (rate * elapsed.Seconds())
	t.Logf("fast alone before: %.1f MiB/s", aloneBefore/(1<<20))
	t.Logf("over %v: slow acked %d bytes (%.3f× its quota); fast %.1f MiB/s beside it",
		elapsed.Round(time.Millisecond), s, ratio, float64(f)/elapsed.Seconds()/(1<<20))
	if ratio > 1.1 || ratio < 0.9 {
		t.Errorf("the throttled producer got %.3f× its quota through over %v, want within 10 %%", ratio, elapsed)
	}
	// Not slowed: the unthrottled producer's rate beside the throttled one
	// against its rate alone, in alternating slices of the same minutes
	// (the throttled one paused, its buffered records drained, for the
	// alone slices), each pair's ratio taken within the pair: a busy spell
	// of the shared machine (CI runs other packages' tests beside this
	// one) then falls on both sides of a ratio, as it did not when one
	// window of each was compared (a 0.60× seen in CI; 0.98× alone). The
	// throttled producer takes 1 MiB/s of the node.
	const pairs = 4
	var ratios []float64
	for i := range pairs {
		measure := func(beside bool) float64 {
			paused.Store(!beside)
			time.Sleep(700 * time.Millisecond) // the other's buffered records drain, or it resumes
			return rateOf(1500 * time.Millisecond)
		}
		var b, a float64
		if i%2 == 0 {
			b, a = measure(true), measure(false)
		} else {
			a, b = measure(false), measure(true)
		}
		t.Logf("pair %d: fast %.1f MiB/s beside the throttled one, %.1f MiB/s alone (%.2f×)", i, b/(1<<20), a/(1<<20), b/a)
		ratios = append(ratios, b/a)
	}
	slices.Sort(ratios)
	med := (ratios[pairs/2-1] + ratios[pairs/2]) / 2
	if med < 0.7 {
		t.Errorf("the producer without a quota made %.2f× (median of %d pairs) of its rate alone beside the throttled one: slowed", med, pairs)
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
	consume := func(clientID string, d time.Duration, got *atomic.Int64) {
		cl := franzClient(t, n.KafkaAddr, kgo.ClientID(clientID), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxPartitionBytes(256<<10))
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got.Add(int64(len(r.Value))) })
		}
	}
	// A client new to a rate may take the window's worth at once: measure
	// from 2 s on, for 10 s.
	var slow atomic.Int64
	done := make(chan struct{})
	go func() { defer close(done); consume("slowc", 13*time.Second, &slow) }()
	time.Sleep(2 * time.Second)
	s0, t0 := slow.Load(), time.Now()
	time.Sleep(10 * time.Second)
	elapsed := time.Since(t0)
	read := slow.Load() - s0
	<-done
	var fast atomic.Int64
	start := time.Now()
	consume("fastc", 5*time.Second, &fast)
	ratio := float64(read) / (rate * elapsed.Seconds())
	t.Logf("over %v: slowc read %d bytes (%.3f× its quota); fastc %d in %v", elapsed.Round(time.Millisecond), read, ratio, fast.Load(), time.Since(start).Round(time.Millisecond))
	if ratio > 1.1 || ratio < 0.9 {
		t.Errorf("the throttled consumer read %.3f× its quota over %v, want within 10 %%", ratio, elapsed)
	}
	if fast.Load() != int64(len(recs))*16<<10 {
		t.Errorf("the consumer without a quota read %d bytes in 5 s, want the whole topic", fast.Load())
	}
}
