package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node/cluster"
	"github.com/spool-log/spool/node/hosted"
)

func TestProduceFetchRoundTripEveryCodec(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	codecs := map[string]kgo.CompressionCodec{
		"none":   kgo.NoCompression(),
		"gzip":   kgo.GzipCompression(),
		"snappy": kgo.SnappyCompression(),
		"lz4":    kgo.Lz4Compression(),
		"zstd":   kgo.ZstdCompression(),
	}
	const records = 300
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := "codec-" + name
			createTopic(t, adm, topic, 3, nil)
			prod := newClient(t, n, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec))
			var rs []*kgo.Record
			for i := 0; i < records; i++ {
				rs = append(rs, &kgo.Record{
					Key:     []byte(recordKey(i)),
					Value:   []byte(recordValue(i)),
					Headers: []kgo.RecordHeader{{Key: "i", Value: []byte(fmt.Sprint(i))}},
				})
			}
			if err := prod.ProduceSync(testCtx(t), rs...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			got := consumeAll(t, n, topic, records)
			if len(got) != records {
				t.Fatalf("consumed %d records, want %d", len(got), records)
			}
			seen := make(map[string]bool)
			for _, r := range got {
				i := 0
				fmt.Sscanf(string(r.Key), "key-%d", &i)
				if string(r.Value) != recordValue(i) {
					t.Fatalf("record %s has value %q", r.Key, r.Value)
				}
				if len(r.Headers) != 1 || string(r.Headers[0].Value) != fmt.Sprint(i) {
					t.Fatalf("record %s has headers %v", r.Key, r.Headers)
				}
				seen[string(r.Key)] = true
			}
			if len(seen) != records {
				t.Fatalf("%d distinct keys, want %d", len(seen), records)
			}
		})
	}
	st := n.Stats()
	if st.SendfileBytes+st.CopyBytes == 0 || st.BytesOut == 0 {
		t.Fatalf("stats show no fetched bytes: %+v", st)
	}
	if st.RecordsIn != int64(records*len(codecs)) {
		t.Fatalf("records in = %d, want %d", st.RecordsIn, records*len(codecs))
	}
}

func TestCompressedBatchStoredAsSent(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	createTopic(t, adm, "zstd", 1, nil)
	prod := newClient(t, n, kgo.DefaultProduceTopic("zstd"), kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	var rs []*kgo.Record
	for i := 0; i < 200; i++ {
		rs = append(rs, &kgo.Record{Value: bytes.Repeat([]byte("z"), 500)})
	}
	if err := prod.ProduceSync(testCtx(t), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// 100 KB of one letter compresses to far less: the segment holds the
	// compressed batch, not the records.
	seg := filepath.Join(n.cfg.DataDir, "zstd-0", fmt.Sprintf("%020d.log", 0))
	fi, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() >= 200*500/10 {
		t.Fatalf("segment is %d bytes for 100 KB of zstd-compressible data: batch not stored compressed", fi.Size())
	}
	b, _ := os.ReadFile(seg)
	if h, err := recordbatch.ParseHeader(b); err != nil || h.Compression() != recordbatch.CompressionZstd {
		t.Fatalf("stored batch codec %d, want zstd (%v)", h.Compression(), err)
	}
}

func TestLongPollWakesOnNewData(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	createTopic(t, adm, "poll", 1, nil)
	cl := newClient(t, n)

	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 10 * 60 * 1000 // far beyond the test's deadline
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "poll"
	spec, _ := n.catalog.Topic("poll")
	rt.TopicID = spec.ID // kgo sends the broker's highest version, v13+ by id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset = 0
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)

	type result struct {
		resp kmsg.Response
		err  error
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		resp, err := cl.SeedBrokers()[0].Request(ctx, req)
		done <- result{resp, err}
	}()

	p := n.parts.Get("poll", 0)
	retry.Run(t, 10*time.Second, func() error {
		if p.Replica.Waiting() == 0 {
			return errors.New("fetch not waiting yet")
		}
		return nil
	})
	select {
	case r := <-done:
		t.Fatalf("fetch returned before any data: %v %v", r.resp, r.err)
	default:
	}

	prod := newClient(t, n, kgo.DefaultProduceTopic("poll"))
	if err := prod.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("wake up")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("long poll did not return with the new data: %v", r.err)
	}
	resp := r.resp.(*kmsg.FetchResponse)
	part := resp.Topics[0].Partitions[0]
	if part.ErrorCode != 0 || part.HighWatermark != 1 || len(part.RecordBatches) == 0 {
		t.Fatalf("fetch answer: error %d, hwm %d, %d bytes of records", part.ErrorCode, part.HighWatermark, len(part.RecordBatches))
	}
	retry.Run(t, 5*time.Second, func() error {
		if p.Replica.Waiting() != 0 {
			return fmt.Errorf("%d waiters left registered", p.Replica.Waiting())
		}
		return nil
	})
}

func TestFetchOutOfRange(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	createTopic(t, newAdmin(t, n), "oor", 1, nil)
	cl := newClient(t, n)
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "oor"
	spec, _ := n.catalog.Topic("oor")
	rt.TopicID = spec.ID // kgo sends the broker's highest version, v13+ by id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset = 42
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := rawRequest[*kmsg.FetchResponse](t, cl, req)
	if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch past the end: error %d, want OFFSET_OUT_OF_RANGE", got)
	}
}

func TestListOffsetsByTime(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	createTopic(t, adm, "times", 1, nil)
	prod := newClient(t, n, kgo.DefaultProduceTopic("times"))
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := 0; i < 10; i++ {
		r := &kgo.Record{Value: []byte(fmt.Sprint(i)), Timestamp: base.Add(time.Duration(i) * time.Second)}
		if err := prod.ProduceSync(testCtx(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ctx := testCtx(t)
	after, err := adm.ListOffsetsAfterMilli(ctx, base.Add(3500*time.Millisecond).UnixMilli(), "times")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := after.Lookup("times", 0); o.Offset != 4 || o.Timestamp != base.Add(4*time.Second).UnixMilli() {
		t.Fatalf("offset after 3.5s = %d (ts %d), want 4 (ts %d)", o.Offset, o.Timestamp, base.Add(4*time.Second).UnixMilli())
	}
	// Past the newest record Kafka answers -1 (kadm turns that into the
	// end offset, so ask directly).
	lreq := kmsg.NewPtrListOffsetsRequest()
	lrt := kmsg.NewListOffsetsRequestTopic()
	lrt.Topic = "times"
	lrp := kmsg.NewListOffsetsRequestTopicPartition()
	lrp.Timestamp = time.Now().Add(time.Hour).UnixMilli()
	lrt.Partitions = append(lrt.Partitions, lrp)
	lreq.Topics = append(lreq.Topics, lrt)
	lresp := rawRequest[*kmsg.ListOffsetsResponse](t, newClient(t, n), lreq)
	if p := lresp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != -1 || p.Timestamp != -1 {
		t.Fatalf("offset after the newest record: error %d, offset %d, ts %d; want -1, -1", p.ErrorCode, p.Offset, p.Timestamp)
	}
	starts, err := adm.ListStartOffsets(ctx, "times")
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, "times")
	if err != nil {
		t.Fatal(err)
	}
	maxes, err := adm.ListMaxTimestampOffsets(ctx, "times")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := starts.Lookup("times", 0)
	e, _ := ends.Lookup("times", 0)
	m, _ := maxes.Lookup("times", 0)
	if s.Offset != 0 || e.Offset != 10 || m.Offset != 9 || m.Timestamp != base.Add(9*time.Second).UnixMilli() {
		t.Fatalf("earliest %d, latest %d, max timestamp at %d (ts %d); want 0, 10, 9", s.Offset, e.Offset, m.Offset, m.Timestamp)
	}
}

func TestCreateDeleteTopicsWithConfigs(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	ctx := testCtx(t)
	str := func(s string) *string { return &s }

	configs := map[string]*string{
		"retention.ms":           str("3600000"),
		"retention.bytes":        str("1048576"),
		"segment.bytes":          str("65536"),
		"message.timestamp.type": str("LogAppendTime"),
	}
	r, err := adm.CreateTopic(ctx, 4, 1, configs, "configured")
	if err != nil {
		t.Fatalf("create: %v %s", err, r.ErrMessage)
	}
	if r.NumPartitions != 4 {
		t.Fatalf("create answered %d partitions", r.NumPartitions)
	}
	spec1, _ := n.catalog.Topic("configured")
	for i := 0; i < 4; i++ {
		if _, err := os.Stat(hosted.PartitionDir(n.cfg.DataDir, "configured", int32(i))); err != nil {
			t.Fatalf("partition %d directory: %v", i, err)
		}
	}

	rcs, err := adm.DescribeTopicConfigs(ctx, "configured")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("configured", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe: %v %v", err, rc.Err)
	}
	got := make(map[string]string)
	for _, c := range rc.Configs {
		got[c.Key] = c.MaybeValue()
		if _, set := configs[c.Key]; set != (c.Source == kmsg.ConfigSourceDynamicTopicConfig) {
			t.Errorf("config %s has source %v", c.Key, c.Source)
		}
	}
	for k, v := range configs {
		if got[k] != *v {
			t.Errorf("config %s = %q, want %q", k, got[k], *v)
		}
	}

	// LogAppendTime: the broker's clock replaces the producer's.
	prod := newClient(t, n, kgo.DefaultProduceTopic("configured"))
	old := time.Unix(1_000_000, 0)
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("x"), Timestamp: old, Partition: 0}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	recs := consumeAll(t, n, "configured", 1)
	if !recs[0].Timestamp.After(old.Add(time.Hour)) || recs[0].Attrs.TimestampType() != 1 {
		t.Fatalf("record timestamp %v (type %v), want log append time", recs[0].Timestamp, recs[0].Attrs.TimestampType())
	}

	// Errors: existing topic, bad config, bad values, validate-only.
	if r, _ := adm.CreateTopic(ctx, 1, 1, nil, "configured"); !errors.Is(r.Err, kerr.TopicAlreadyExists) {
		t.Errorf("duplicate create: %v", r.Err)
	}
	if r, _ := adm.CreateTopic(ctx, 1, 1, map[string]*string{"no.such.config": str("1")}, "badcfg"); !errors.Is(r.Err, kerr.InvalidConfig) {
		t.Errorf("unknown config: %v", r.Err)
	}
	if r, _ := adm.CreateTopic(ctx, 1, 1, map[string]*string{"message.timestamp.type": str("Sometimes")}, "badcfg"); !errors.Is(r.Err, kerr.InvalidConfig) {
		t.Errorf("bad timestamp type: %v", r.Err)
	}
	if r, _ := adm.CreateTopic(ctx, 1, 3, nil, "badrf"); !errors.Is(r.Err, kerr.InvalidReplicationFactor) {
		t.Errorf("replication factor 3 on one node: %v", r.Err)
	}
	if r, _ := adm.ValidateCreateTopics(ctx, 2, 1, nil, "dryrun"); r["dryrun"].Err != nil {
		t.Errorf("validate only: %v", r["dryrun"].Err)
	}
	if _, ok := n.catalog.Topic("dryrun"); ok {
		t.Errorf("validate-only created the topic")
	}

	// Delete removes the data; a recreated topic starts empty with a new id.
	if _, err := adm.DeleteTopic(ctx, "configured"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := os.Stat(hosted.PartitionDir(n.cfg.DataDir, "configured", 0)); !os.IsNotExist(err) {
		t.Fatalf("partition directory after delete: %v", err)
	}
	if r, _ := adm.DeleteTopic(ctx, "configured"); !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("second delete: %v", r.Err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "configured"); err != nil {
		t.Fatal(err)
	}
	if spec2, _ := n.catalog.Topic("configured"); spec2.ID == spec1.ID {
		t.Fatalf("recreated topic kept id %v", spec1.ID)
	}
	// Metadata v10+ carries the topic id.
	td, err := adm.ListTopics(ctx, "configured")
	if err != nil {
		t.Fatal(err)
	}
	if spec2, _ := n.catalog.Topic("configured"); [16]byte(td["configured"].ID) != [16]byte(spec2.ID) {
		t.Fatalf("metadata topic id %v, catalog %v", td["configured"].ID, spec2.ID)
	}
	ends, err := adm.ListEndOffsets(ctx, "configured")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("configured", 0); o.Offset != 0 {
		t.Fatalf("recreated topic has end offset %d", o.Offset)
	}
}

func TestInvalidTopicNamesRefused(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	cl := newClient(t, n)
	bad := []string{"", ".", "..", "../x", "a/b", "x\x00y", strings.Repeat("t", 250), "spaces here", "ü"}

	create := kmsg.NewPtrCreateTopicsRequest()
	create.TimeoutMillis = 5000
	for _, name := range bad {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic = name
		rt.NumPartitions = 1
		rt.ReplicationFactor = 1
		create.Topics = append(create.Topics, rt)
	}
	cresp := rawRequest[*kmsg.CreateTopicsResponse](t, cl, create)
	for _, rt := range cresp.Topics {
		if rt.ErrorCode != kerr.InvalidTopicException.Code {
			t.Errorf("create %q: error %d, want INVALID_TOPIC_EXCEPTION", rt.Topic, rt.ErrorCode)
		}
	}

	meta := kmsg.NewPtrMetadataRequest()
	meta.AllowAutoTopicCreation = true
	for _, name := range bad {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		meta.Topics = append(meta.Topics, rt)
	}
	mresp := rawRequest[*kmsg.MetadataResponse](t, cl, meta)
	for _, rt := range mresp.Topics {
		if rt.ErrorCode != kerr.InvalidTopicException.Code {
			t.Errorf("metadata %q: error %d, want INVALID_TOPIC_EXCEPTION", *rt.Topic, rt.ErrorCode)
		}
	}

	for _, name := range []string{"../escape", "a/b"} {
		p := produceRaw(t, cl, name, rawBatch(-1, -1, -1, time.Now().UnixMilli(), "v"))
		if p.ErrorCode != kerr.InvalidTopicException.Code {
			t.Errorf("produce to %q: error %d, want INVALID_TOPIC_EXCEPTION", name, p.ErrorCode)
		}
	}

	entries, _ := os.ReadDir(n.cfg.DataDir)
	for _, e := range entries {
		if e.IsDir() && e.Name() != cluster.Dir {
			t.Errorf("data dir has %s after only invalid names", e.Name())
		}
	}
	parent, _ := os.ReadDir(filepath.Dir(n.cfg.DataDir))
	if len(parent) != 1 {
		t.Errorf("something was created beside the data dir: %d entries", len(parent))
	}
}

func TestAutoCreateTopics(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.DefaultPartitions = 2
	n := startNode(t, cfg)
	prod := newClient(t, n, kgo.DefaultProduceTopic("auto"), kgo.AllowAutoTopicCreation())
	if err := prod.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	spec, ok := n.catalog.Topic("auto")
	if !ok || spec.Partitions != 2 {
		t.Fatalf("auto-created topic: %v %+v", ok, spec)
	}

	cfg2 := testConfig(t, t.TempDir())
	cfg2.AutoCreateTopics = false
	n2 := startNode(t, cfg2)
	cl := newClient(t, n2)
	meta := kmsg.NewPtrMetadataRequest()
	meta.AllowAutoTopicCreation = true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("auto")
	meta.Topics = append(meta.Topics, rt)
	resp := rawRequest[*kmsg.MetadataResponse](t, cl, meta)
	if resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("metadata with auto-create off: error %d", resp.Topics[0].ErrorCode)
	}
}

func TestIdempotentRetryDedup(t *testing.T) {
	dir := t.TempDir()
	n, err := New(testConfig(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	waitAdmitted(t, n)
	createTopic(t, newAdmin(t, n), "idem", 1, nil)
	cl := newClient(t, n)

	initPID := func(cl *kgo.Client) int64 {
		resp := rawRequest[*kmsg.InitProducerIDResponse](t, cl, kmsg.NewPtrInitProducerIDRequest())
		if resp.ErrorCode != 0 || resp.ProducerID < 0 {
			t.Fatalf("init producer id: error %d, id %d", resp.ErrorCode, resp.ProducerID)
		}
		return resp.ProducerID
	}
	pid := initPID(cl)
	now := time.Now().UnixMilli()
	first := rawBatch(pid, 0, 0, now, "a", "b", "c")
	second := rawBatch(pid, 0, 3, now, "d", "e")

	if p := produceRaw(t, cl, "idem", append([]byte(nil), first...)); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("first batch: error %d, offset %d", p.ErrorCode, p.BaseOffset)
	}
	if p := produceRaw(t, cl, "idem", append([]byte(nil), first...)); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("retried first batch: error %d, offset %d; want the original offset 0", p.ErrorCode, p.BaseOffset)
	}
	if p := produceRaw(t, cl, "idem", append([]byte(nil), second...)); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("second batch: error %d, offset %d", p.ErrorCode, p.BaseOffset)
	}
	if p := produceRaw(t, cl, "idem", rawBatch(pid, 0, 10, now, "gap")); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("batch after a sequence gap: error %d, want OUT_OF_ORDER_SEQUENCE_NUMBER", p.ErrorCode)
	}
	if end := n.parts.Get("idem", 0).Replica.LogEndOffset(); end != 5 {
		t.Fatalf("log end %d after a duplicate, want 5", end)
	}
	stopNode(t, n)

	// After a restart the producer state comes back from the log, so the
	// retry is still recognised; producer ids are not reused.
	n2 := startNode(t, testConfig(t, dir))
	cl2 := newClient(t, n2)
	if p := produceRaw(t, cl2, "idem", append([]byte(nil), second...)); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("retry after restart: error %d, offset %d; want the original offset 3", p.ErrorCode, p.BaseOffset)
	}
	if end := n2.parts.Get("idem", 0).Replica.LogEndOffset(); end != 5 {
		t.Fatalf("log end %d after a retry across restart, want 5", end)
	}
	if pid2 := initPID(cl2); pid2 == pid {
		t.Fatalf("producer id %d handed out again after restart", pid)
	}

	// A real idempotent franz-go producer works end to end.
	prod := newClient(t, n2, kgo.DefaultProduceTopic("idem"))
	if err := prod.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("f")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	recs := consumeAll(t, n2, "idem", 6)
	var vals []string
	for _, r := range recs {
		vals = append(vals, string(r.Value))
	}
	if strings.Join(vals, "") != "abcdef" {
		t.Fatalf("log holds %q", vals)
	}
}

func TestRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	n, err := New(testConfig(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	waitAdmitted(t, n)
	adm := newAdmin(t, n)
	createTopic(t, adm, "durable", 2, nil)
	prod := newClient(t, n, kgo.DefaultProduceTopic("durable"))
	for i := 0; i < 100; i++ {
		prod.Produce(testCtx(t), &kgo.Record{Key: []byte(recordKey(i)), Value: []byte(recordValue(i))}, nil)
	}
	if err := prod.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	spec, _ := n.catalog.Topic("durable")
	prod.Close()
	stopNode(t, n)

	n2 := startNode(t, testConfig(t, dir))
	spec2, ok := n2.catalog.Topic("durable")
	if !ok || spec2.ID != spec.ID {
		t.Fatalf("topic after restart: %v, id %v want %v", ok, spec2.ID, spec.ID)
	}
	recs := consumeAll(t, n2, "durable", 100)
	if len(recs) != 100 {
		t.Fatalf("%d records after restart", len(recs))
	}
}

func TestAcksZero(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	createTopic(t, newAdmin(t, n), "fire", 1, nil)
	prod := newClient(t, n, kgo.DefaultProduceTopic("fire"), kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	for i := 0; i < 10; i++ {
		prod.Produce(testCtx(t), &kgo.Record{Value: []byte(fmt.Sprint(i))}, nil)
	}
	if err := prod.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := len(consumeAll(t, n, "fire", 10)); got != 10 {
		t.Fatalf("%d records", got)
	}
}

func TestAdminEndpoints(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	createTopic(t, newAdmin(t, n), "m", 1, nil)
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + n.AdminAddr() + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := get(path); code != 200 {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}
	code, body := get("/metrics")
	if code != 200 || !strings.Contains(body, `spool_kafka_request_seconds_count{api="Metadata"}`) {
		t.Errorf("/metrics: %d, missing request counters:\n%.2000s", code, body)
	}
	// Produce counts reach go-metrics with the next flush.
	prod := newClient(t, n, kgo.DefaultProduceTopic("m"), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()))
	if err := prod.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("counted")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	want := `spool_produce_records{topic="m"} 1`
	retry.Run(t, 10*time.Second, func() error {
		_, body = get("/metrics")
		return retry.Check(strings.Contains(body, want), "/metrics has no %s:\n%.3000s", want, body)
	})
	code, body = get("/v1/stats")
	if code != 200 || !strings.Contains(body, `"sendfile_bytes"`) || !strings.Contains(body, `"topic": "m"`) {
		t.Errorf("/v1/stats: %d %s", code, body)
	}
}

func TestShutdownEndsLongPoll(t *testing.T) {
	n, err := New(testConfig(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	waitAdmitted(t, n)
	createTopic(t, newAdmin(t, n), "idle", 1, nil)
	cons := newClient(t, n, kgo.ConsumeTopics("idle"), kgo.FetchMaxWait(5*time.Minute))
	go cons.PollFetches(context.Background())
	p := n.parts.Get("idle", 0)
	retry.Run(t, 10*time.Second, func() error {
		if p.Replica.Waiting() == 0 {
			return errors.New("no fetch waiting")
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a waiting fetch: %v", err)
	}
}

func TestListOffsetsByTimeInsideCompressedBatches(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	for name, codec := range codecs {
		topic := "bytime-" + name
		createTopic(t, adm, topic, 1, nil)
		prod := newClient(t, n, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(time.Second))
		var rs []*kgo.Record
		for i := 0; i < 50; i++ {
			rs = append(rs, &kgo.Record{Value: []byte(recordValue(i)), Timestamp: base.Add(time.Duration(i) * 10 * time.Millisecond)})
		}
		// One ProduceSync call lingers into a single batch.
		if err := prod.ProduceSync(testCtx(t), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if segs := n.parts.Get(topic, 0).Replica.LogEndOffset(); segs != 50 {
			t.Fatalf("%s: end offset %d", name, segs)
		}
		for _, i := range []int{0, 1, 17, 49} {
			ms := base.Add(time.Duration(i)*10*time.Millisecond - 5*time.Millisecond).UnixMilli()
			got, err := adm.ListOffsetsAfterMilli(testCtx(t), ms, topic)
			if err != nil {
				t.Fatal(err)
			}
			if o, _ := got.Lookup(topic, 0); o.Offset != int64(i) {
				t.Errorf("%s: offset at %d ms = %d, want %d", name, ms, o.Offset, i)
			}
		}
		maxes, err := adm.ListMaxTimestampOffsets(testCtx(t), topic)
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := maxes.Lookup(topic, 0); o.Offset != 49 {
			t.Errorf("%s: max timestamp offset %d, want 49", name, o.Offset)
		}
	}
}

func TestProduceOldVersionsRefused(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	createTopic(t, newAdmin(t, n), "old", 1, nil)
	for v := int16(0); v < 3; v++ {
		req := kmsg.NewPtrProduceRequest()
		req.Version = v
		req.Acks = 1
		req.TimeoutMillis = 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "old"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = rawBatch(-1, -1, -1, time.Now().UnixMilli(), "v")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := rawExact[*kmsg.ProduceResponse](t, n.KafkaAddr(), req)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.UnsupportedForMessageFormat.Code {
			t.Errorf("produce v%d (sent as v%d): error %d, want UNSUPPORTED_FOR_MESSAGE_FORMAT", v, resp.Version, code)
		}
	}
	if end := n.parts.Get("old", 0).Replica.LogEndOffset(); end != 0 {
		t.Fatalf("old-format produce wrote %d records", end)
	}
}

func TestProduceRejectsBadBatches(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.Topic.MaxMessageBytes = 4096
	n := startNode(t, cfg)
	createTopic(t, newAdmin(t, n), "strict", 1, nil)
	cl := newClient(t, n)
	now := time.Now().UnixMilli()

	badCRC := rawBatch(-1, -1, -1, now, "v")
	badCRC[len(badCRC)-1] ^= 0xff
	two := append(rawBatch(-1, -1, -1, now, "a"), rawBatch(-1, -1, -1, now, "b")...)
	truncated := rawBatch(-1, -1, -1, now, "abc")[:40]
	huge := rawBatch(-1, -1, -1, now, strings.Repeat("x", 5000))
	txn := rawBatch(-1, -1, -1, now, "t")
	txn[recordbatch.OffAttributes+1] |= recordbatch.AttrTransactional // low attribute byte
	txn = rawBatchFix(txn)
	ctl := rawBatch(-1, -1, -1, now, "c")
	ctl[recordbatch.OffAttributes+1] |= recordbatch.AttrControl | recordbatch.AttrTransactional
	ctl = rawBatchFix(ctl)

	for _, c := range []struct {
		name  string
		batch []byte
		want  *kerr.Error
	}{
		{"bad crc", badCRC, kerr.CorruptMessage},
		{"two batches", two, kerr.InvalidRecord},
		{"truncated", truncated, kerr.CorruptMessage},
		{"too large", huge, kerr.MessageTooLarge},
		// Transactional without a transactional id (and producer):
		// no transaction holds it.
		{"transactional", txn, kerr.InvalidTxnState},
		// Markers are the broker's own.
		{"control", ctl, kerr.InvalidRecord},
	} {
		if p := produceRaw(t, cl, "strict", c.batch); p.ErrorCode != c.want.Code {
			t.Errorf("%s: error %d, want %s", c.name, p.ErrorCode, c.want.Message)
		}
	}
	if end := n.parts.Get("strict", 0).Replica.LogEndOffset(); end != 0 {
		t.Fatalf("refused batches wrote %d records", end)
	}
	// The node still serves.
	if p := produceRaw(t, cl, "strict", rawBatch(-1, -1, -1, now, "ok")); p.ErrorCode != 0 {
		t.Fatalf("good batch after bad ones: error %d", p.ErrorCode)
	}
}
