package node

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node/compaction"
	"github.com/spool-log/spool/node/group"
)

// smallSegments makes a local partition roll every few KiB, so a test's
// data spans closed segments the cleaner may touch.
func smallSegments(t testing.TB, n *Node, topic string, p int32) *localPartition {
	t.Helper()
	lp := n.parts.Get(topic, p)
	if lp == nil {
		t.Fatalf("%s-%d is not local", topic, p)
	}
	c := lp.Replica.Config()
	c.SegmentBytes = 8 << 10
	lp.Replica.SetConfig(c)
	return lp
}

// TestConsumerOffsetsCompacted commits a group's offsets thousands of times,
// cleans __consumer_offsets, and checks the topic shrank and that the group
// resumes from its last commits after a restart; then, with a short
// cleaner interval, that the background cleaner keeps it small.
func TestConsumerOffsetsCompacted(t *testing.T) {
	commits := 2000
	if testing.Short() {
		commits = 500
	}
	const parts = 4
	dir := t.TempDir()
	cfg := groupTestConfig(t, dir)
	cfg.Groups.OffsetsTopicPartitions = 1
	n := startNode(t, cfg)
	adm := newAdmin(t, n)
	createTopic(t, adm, "orders", parts, nil)
	produceTo(t, n, "orders", parts, 100, 0)

	ctx := testCtx(t)
	commit := func(i int) {
		offs := kadm.Offsets{}
		for p := int32(0); p < parts; p++ {
			offs.Add(kadm.Offset{Topic: "orders", Partition: p, At: int64((i + int(p)) % 97), LeaderEpoch: -1})
		}
		resp, err := adm.CommitOffsets(ctx, "resumers", offs)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	commit(0)
	if spec, _ := n.catalog.Topic(group.TopicName); spec.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("%s configs %v, want cleanup.policy=compact", group.TopicName, spec.Configs)
	}
	lp := smallSegments(t, n, group.TopicName, 0)
	if !lp.Replica.Config().Compact {
		t.Fatalf("%s-0 is not compacted", group.TopicName)
	}
	start := time.Now()
	for i := 1; i < commits; i++ {
		commit(i)
	}
	t.Logf("%d commits in %v", commits, time.Since(start))
	if err := lp.Replica.Flush(); err != nil {
		t.Fatal(err)
	}
	before, segsBefore := lp.Replica.Size(), lp.Replica.SegmentCount()
	startOff, endOff := lp.Replica.LogStartOffset(), lp.Replica.LogEndOffset()
	if cleaned := n.cleaner.CleanLogs(); cleaned < 1 {
		t.Fatalf("the cleaner pass cleaned %d logs", cleaned)
	}
	after := lp.Replica.Size()
	t.Logf("%s-0: %d bytes in %d segments -> %d bytes in %d segments", group.TopicName, before, segsBefore, after, lp.Replica.SegmentCount())
	if after*5 > before {
		t.Fatalf("%s-0 shrank from %d to only %d bytes", group.TopicName, before, after)
	}
	if lp.Replica.LogStartOffset() != startOff || lp.Replica.LogEndOffset() != endOff {
		t.Fatalf("offsets moved: [%d, %d) -> [%d, %d)", startOff, endOff, lp.Replica.LogStartOffset(), lp.Replica.LogEndOffset())
	}
	stopNode(t, n)

	// After a restart the coordinator replays the cleaned log: the group
	// resumes from its newest commits. A short interval now lets the
	// background cleaner run by itself.
	cfg = groupTestConfig(t, dir)
	cfg.Groups.OffsetsTopicPartitions = 1
	cfg.RetentionCheckInterval = 50 * time.Millisecond
	n = startNode(t, cfg)
	adm = newAdmin(t, n)
	ctx = testCtx(t)
	want := map[int32]int64{}
	for p := int32(0); p < parts; p++ {
		want[p] = int64((commits - 1 + int(p)) % 97)
	}
	fetched, err := adm.FetchOffsets(ctx, "resumers")
	if err != nil {
		t.Fatal(err)
	}
	for p, at := range want {
		if o, ok := fetched.Lookup("orders", p); !ok || o.At != at {
			t.Fatalf("after restart partition %d committed %+v, want %d", p, o, at)
		}
	}
	cl := newClient(t, n, kgo.ConsumerGroup("resumers"), kgo.ConsumeTopics("orders"), kgo.FetchMaxWait(100*time.Millisecond))
	first := map[int32]int64{}
	got, total := 0, 0
	for _, at := range want {
		total += int(100 - at)
	}
	for got < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d after restart: %v", got, total, ctx.Err())
		}
		for _, r := range fs.Records() {
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = r.Offset
			}
			got++
		}
	}
	cl.Close()
	for p, at := range want {
		if first[p] != at {
			t.Fatalf("partition %d resumed at %d, want %d", p, first[p], at)
		}
	}

	lp = smallSegments(t, n, group.TopicName, 0)
	for i := 0; i < commits/4; i++ {
		commit(commits + i)
	}
	lp.Replica.Flush()
	retry.Run(t, 20*time.Second, func() error {
		if ratio, dirty := lp.Replica.DirtyRatio(); dirty > 0 && ratio >= lp.Replica.Config().MinCleanableRatio {
			return fmt.Errorf("dirty ratio %.2f of %d bytes", ratio, dirty)
		}
		return nil
	})
}

// TestCompactedTopicEveryCodec produces overlapping keys to a compacted topic
// with every codec, cleans it, and consumes it with franz-go: rebuilt
// batches, recompressed by the node's codecs, must decode, and each key's
// newest value must be what survives.
func TestCompactedTopicEveryCodec(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := "compacted-" + name
			createTopic(t, adm, topic, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact"), "segment.bytes": kmsg.StringPtr("4096")})
			prod := newClient(t, n, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec))
			newest := map[string]string{}
			produced := 0
			for round := 0; round < 30; round++ {
				var rs []*kgo.Record
				for j := 0; j < 20; j++ {
					k := recordKey((round*7 + j) % 60)
					v := fmt.Sprintf("%s-round-%d", recordValue(j), round)
					rs = append(rs, &kgo.Record{Key: []byte(k), Value: []byte(v)})
					newest[k] = v
				}
				if err := prod.ProduceSync(testCtx(t), rs...).FirstErr(); err != nil {
					t.Fatalf("produce: %v", err)
				}
				produced += len(rs)
			}
			lp := n.parts.Get(topic, 0)
			lp.Replica.Flush()
			before := lp.Replica.Size()
			st, err := lp.Replica.Clean(compaction.MapBytes)
			if err != nil || st.SegmentsWritten == 0 {
				t.Fatalf("clean: %+v, %v", st, err)
			}
			if lp.Replica.Size() >= before {
				t.Fatalf("size %d -> %d", before, lp.Replica.Size())
			}
			end := lp.Replica.LogEndOffset()
			cl := newClient(t, n, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			ctx := testCtx(t)
			last := map[string]string{}
			count := 0
			prevOff := int64(-1)
			for prevOff < end-1 {
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					t.Fatalf("consumed up to offset %d of %d: %v", prevOff, end, ctx.Err())
				}
				fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
				for _, r := range fs.Records() {
					if r.Offset <= prevOff {
						t.Fatalf("offset %d after %d", r.Offset, prevOff)
					}
					prevOff = r.Offset
					last[string(r.Key)] = string(r.Value)
					count++
				}
			}
			if fmt.Sprint(last) != fmt.Sprint(newest) {
				t.Fatalf("newest values differ after cleaning:\n got %v\nwant %v", last, newest)
			}
			if count >= produced {
				t.Fatalf("consumed %d records of %d produced: nothing cleaned away", count, produced)
			}
			t.Logf("%s: %d bytes -> %d, %d of %d records left", name, before, lp.Replica.Size(), count, produced)
		})
	}
}

func TestCompactedTopicRefusesKeylessRecords(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	createTopic(t, adm, "table", 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact,delete")})
	for _, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.ZstdCompression()} {
		prod := newClient(t, n, kgo.DefaultProduceTopic("table"), kgo.ProducerBatchCompression(codec), kgo.RecordRetries(0))
		err := prod.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("no key")}).FirstErr()
		if !errors.Is(err, kerr.InvalidRecord) {
			t.Fatalf("keyless record: %v, want INVALID_RECORD", err)
		}
		if err := prod.ProduceSync(testCtx(t), &kgo.Record{Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("keyed record: %v", err)
		}
	}
	rc, err := adm.DescribeTopicConfigs(testCtx(t), "table")
	if err != nil {
		t.Fatal(err)
	}
	c, err := rc.On("table", nil)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]string{}
	for _, e := range c.Configs {
		values[e.Key] = e.MaybeValue()
	}
	if values["cleanup.policy"] != "compact,delete" || values["delete.retention.ms"] != "86400000" || values["min.cleanable.dirty.ratio"] != "0.5" {
		t.Fatalf("described configs %v", values)
	}
	if _, err := adm.CreateTopic(testCtx(t), 1, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("shred")}, "bad"); err == nil {
		t.Fatal("cleanup.policy=shred accepted")
	}
}
