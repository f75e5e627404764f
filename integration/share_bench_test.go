package integration

// The share-group benchmark: consumption of 1 KiB records on one partition
// by 1, 4 and 16 share-group members, each as a ratio of an ordinary
// consumer group's consumption of the same topic in the same run (no
// timed assertion: the ratios are reported). SPOOL_SHARE_BENCH_RECORDS
// sets the records (default 20000, 20 MiB).

import (
	"context"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestShareGroupBenchmarkRatios(t *testing.T) {
	records := 20000
	if v, err := strconv.Atoi(os.Getenv("SPOOL_SHARE_BENCH_RECORDS")); err == nil && v > 0 {
		records = v
	}
	n := StartNode(t)
	topic := uniqueTopic("sharebench")
	franzCreateTopic(t, n.KafkaAddr, topic, 1)
	prod := franzClient(t, n.KafkaAddr, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := make([]byte, 1024)
	var batch []*kgo.Record
	for i := range records {
		batch = append(batch, &kgo.Record{Value: value})
		if len(batch) == 500 || i == records-1 {
			if err := prod.ProduceSync(ctxTimeout(t, 60*time.Second), batch...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			batch = nil
		}
	}

	// The baseline: one ordinary group member reads the partition. Both
	// clocks start at the first record, so joining (the group's initial
	// rebalance delay) is not what is compared.
	group := uniqueTopic("bench-cg")
	var start time.Time
	cg := franzClient(t, n.KafkaAddr, kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := ctxTimeout(t, 120*time.Second)
	for got := 0; got < records; {
		fs := cg.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumer group read %d of %d", got, records)
		}
		if start.IsZero() && len(fs.Records()) > 0 {
			start = time.Now()
		}
		got += len(fs.Records())
	}
	base := time.Since(start)
	cg.Close()
	t.Logf("consumer group, 1 member: %d records in %v (%.0f records/s)", records, base, float64(records)/base.Seconds())

	for _, members := range []int{1, 4, 16} {
		sg := uniqueTopic("bench-sg")
		setShareConfigs(t, n.KafkaAddr, sg, "share.auto.offset.reset", "earliest")
		var (
			got   atomic.Int64
			wg    sync.WaitGroup
			ctx2  context.Context
			first sync.Once
			start time.Time
		)
		ctx2, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		for range members {
			cl := shareConsumer(t, n.KafkaAddr, topic, sg)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx2.Err() == nil {
					fs := cl.PollFetches(ctx2)
					if len(fs.Records()) > 0 {
						first.Do(func() { start = time.Now() })
					}
					if got.Add(int64(len(fs.Records()))) >= int64(records) {
						cancel()
					}
				}
			}()
		}
		wg.Wait()
		took := time.Since(start)
		cancel()
		if got.Load() < int64(records) {
			t.Fatalf("%d share members read %d of %d", members, got.Load(), records)
		}
		t.Logf("share group, %2d members: %d records in %v (%.0f records/s), %.2f× the consumer group", members, records, took, float64(records)/took.Seconds(), base.Seconds()/took.Seconds())
	}
}
