package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/client"
	"github.com/spool-log/spool/integration/history"
	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/tier/tiertest"
)

// TestTierRestoreAfterAllDisksLost: an R=3 tiered topic's records are
// uploaded; then all three nodes are killed and their data dirs wiped, the
// cluster starts again on empty disks against the same bucket, and `spool
// topic restore` recreates the topic. Every record acknowledged below each
// partition's last uploaded offset reads back from offset 0 in order at its
// old offset, none above it appears (the history checker), and the next
// record produced follows the restored range.
func TestTierRestoreAfterAllDisksLost(t *testing.T) {
	sw := tiertest.Start(t)
	store := sw.Store(t, "it/")
	nodes := startCluster(t, 3, withQuickGroups, withTier(sw))
	seeds := kafkaAddrs(nodes)
	topic := uniqueTopic("tierrestore")
	const parts = 2
	createTieredTopic(t, nodes, topic, parts)
	h := history.New()
	// One idempotent batch of a producer that writes nothing after it:
	// only the producer snapshots uploaded beside each later segment,
	// each built on the one before, carry its state to the restored end.
	raw := franzClient(t, seeds[0], kgo.SeedBrokers(seeds...))
	pid, epoch := initProducerID(t, raw)
	const rawValue = "idempotent-before-the-loss"
	h.Send("raw", rawValue)
	rawOffset, code := produceIdempotent(t, raw, topic, 0, pid, epoch, rawValue)
	if code != 0 {
		t.Fatalf("idempotent produce: %s", errName(code))
	}
	h.Acked(rawValue, 0, rawOffset)
	bulkProduceInto(t, h, seeds, topic, parts, "pre", 2<<20) // four segments a partition
	remoteEnd := func(p int32) int64 {
		_, segs, err := storeManifest(t, store, topic, p)
		if err != nil || len(segs) == 0 {
			return 0
		}
		checkRanges(t, segs)
		return segs[len(segs)-1].Next
	}
	for p := int32(0); p < parts; p++ {
		acked := int64(len(h.AckedOffsets(p)))
		retry.Run(t, 90*time.Second, func() error {
			if e := remoteEnd(p); e < acked-int64(2*tierSegmentBytes/1024) {
				return fmt.Errorf("partition %d: remote end %d of %d records", p, e, acked)
			}
			return nil
		})
	}

	// Every replica keeps the last segment's producer snapshot, so a new
	// leader knows the producer although its batch has left every local
	// disk: the retry is answered as the duplicate it is.
	retry.Run(t, 30*time.Second, func() error {
		for _, n := range nodes {
			if bases, _ := localSegments(t, n, topic, 0); len(bases) == 0 || bases[0] <= rawOffset {
				return fmt.Errorf("node %d: partition 0's local log still holds offset %d (segments from %v)", n.ID, rawOffset, bases)
			}
			if _, err := os.Stat(filepath.Join(n.Dir, fmt.Sprintf("%s-0", topic), hosted.ProducerSeedFile)); err != nil {
				return fmt.Errorf("node %d: %v", n.ID, err)
			}
		}
		return nil
	})
	old := waitLeader(t, nodes, topic, 0, -1, 30*time.Second)
	old.Kill()
	var live []*Node
	for _, n := range nodes {
		if n != old {
			live = append(live, n)
		}
	}
	waitLeader(t, live, topic, 0, int32(old.ID), 30*time.Second)
	raw = franzClient(t, live[0].KafkaAddr, kgo.SeedBrokers(kafkaAddrs(live)...))
	if again, code := produceIdempotent(t, raw, topic, 0, pid, epoch, rawValue); code != 0 || again != rawOffset {
		t.Fatalf("the idempotent batch retried to the new leader: at %d, %s; want the duplicate's answer, its old offset %d", again, errName(code), rawOffset)
	}

	for _, n := range live {
		n.Kill()
	}
	for _, n := range nodes {
		if err := os.RemoveAll(n.Dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ends := map[int32]int64{}
	for p := int32(0); p < parts; p++ {
		ends[p] = remoteEnd(p) // final: no node is left to upload
		lost := h.Restored(p, ends[p])
		t.Logf("partition %d: restoring [0,%d); %d acknowledged records above it were not uploaded", p, ends[p], lost)
	}
	for _, n := range nodes {
		n.Start()
	}
	for _, n := range nodes {
		waitMembers(t, n, 20*time.Second, func(ms map[int]member) error {
			return wantStatus(ms, len(nodes), "alive", idsOf(nodes)...)
		})
	}
	out, err := Spool(t, "", "topic", "restore", topic, "-p", strconv.Itoa(parts), "-r", "3", "--brokers", seeds[0],
		"-c", "local.retention.bytes=1", "-c", "segment.bytes="+strconv.Itoa(tierSegmentBytes), "-c", "max.message.bytes="+strconv.Itoa(1<<20))
	if err != nil {
		t.Fatalf("spool topic restore: %v\n%s", err, out)
	}
	waitTopicEverywhere(t, nodes, topic)
	for p := int32(0); p < parts; p++ {
		waitLeader(t, nodes, topic, p, -1, 30*time.Second)
		readRestored(t, h, seeds, topic, p, ends[p])
	}
	res := h.Check()
	t.Logf("history: %s", res)
	if !res.OK() {
		t.Errorf("history check failed: %s", res.Report())
	}
	if res.Checked == 0 || res.Checked != res.Acked {
		t.Errorf("history: %d of %d acknowledged records below the restored ends checked", res.Checked, res.Acked)
	}
	// describe shows the restored partitions' remote and local starts and
	// bytes: all remote below the restored end, nothing local yet.
	retry.Run(t, 20*time.Second, func() error {
		out, err := Spool(t, "", "topic", "describe", topic, "-o", "json", "--brokers", seeds[0])
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		var ds client.DescribedTopics
		if err := json.Unmarshal([]byte(out), &ds); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		for _, dp := range ds[0].Partitions {
			end := ends[dp.Partition]
			if end == 0 {
				continue
			}
			if !dp.Tiered || dp.RemoteStart == nil || *dp.RemoteStart != 0 || dp.LocalStart == nil || *dp.LocalStart != end ||
				dp.RemoteBytes == nil || *dp.RemoteBytes <= 0 || dp.LocalBytes == nil || dp.NotUploaded == nil || *dp.NotUploaded != 0 {
				return fmt.Errorf("partition %d (restored end %d) described as %s", dp.Partition, end, out)
			}
		}
		return nil
	})
	// The producer retries its batch, which only the store holds: the
	// restored partition knows it (from the producer snapshot) and
	// answers with its old offset rather than append it again.
	raw = franzClient(t, seeds[0], kgo.SeedBrokers(seeds...))
	if again, code := produceIdempotent(t, raw, topic, 0, pid, epoch, rawValue); code != 0 || again != rawOffset {
		t.Fatalf("the idempotent batch retried after the restore: at %d, %s; want the duplicate's answer, its old offset %d", again, errName(code), rawOffset)
	}
	cl := franzClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := int32(0); p < parts; p++ {
		r, err := cl.ProduceSync(ctxTimeout(t, 30*time.Second), &kgo.Record{Topic: topic, Partition: p, Value: []byte("after the restore")}).First()
		if err != nil || r.Offset != ends[p] {
			t.Fatalf("partition %d: first record after the restore at %d (%v), want %d", p, r.Offset, err, ends[p])
		}
	}
}

// readRestored reads topic/p from its start up to end into h.
func readRestored(t *testing.T, h *history.History, seeds []string, topic string, p int32, end int64) {
	t.Helper()
	if end == 0 {
		return
	}
	cl := franzClient(t, seeds[0], kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}), kgo.FetchMaxWait(500*time.Millisecond))
	ctx := ctxTimeout(t, 60*time.Second)
	next := int64(0)
	for next < end {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s/%d: reached offset %d of %d before the deadline", topic, p, next, end)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("read %s/%d: %v (retrying)", topic, p, err) })
		for _, r := range fs.Records() {
			next = r.Offset + 1
			h.Read(r.Partition, r.Offset, string(r.Value))
		}
	}
}

// initProducerID gets an idempotent producer id and epoch.
func initProducerID(t testing.TB, cl *kgo.Client) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis = -1
	resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("InitProducerID: %v %v", err, errName(resp.ErrorCode))
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// produceIdempotent sends one batch of pid at epoch, sequence 0, holding
// value, to topic/p's leader with acks=all, retrying only what is
// retriable; it returns the offset answered and the error code.
func produceIdempotent(t testing.TB, cl *kgo.Client, topic string, p int32, pid int64, epoch int16, value string) (int64, int16) {
	t.Helper()
	h := recordbatch.NoProducer()
	h.ProducerID, h.ProducerEpoch = pid, epoch
	h.FirstTimestamp = time.Now().UnixMilli()
	h.MaxTimestamp = h.FirstTimestamp
	batch, err := recordbatch.Build(nil, h, []recordbatch.Record{{Value: []byte(value)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var offset int64
	var code int16
	retry.Run(t, 30*time.Second, func() error {
		resp, err := cl.Request(ctxTimeout(t, 10*time.Second), produceRequest(9, topic, p, batch))
		if err != nil {
			return err
		}
		pr := resp.(*kmsg.ProduceResponse)
		if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
			return fmt.Errorf("produce response %+v", pr)
		}
		part := pr.Topics[0].Partitions[0]
		if e := kerr.ErrorForCode(part.ErrorCode); e != nil && kerr.IsRetriable(e) {
			return e
		}
		offset, code = part.BaseOffset, part.ErrorCode
		return nil
	})
	return offset, code
}
