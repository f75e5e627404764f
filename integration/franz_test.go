package integration

// franz-go (kgo, kadm) against a real node: every codec, keys, headers,
// CreateTime, several partitions, reads from arbitrary offsets and by time.

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
)

func franzCodec(name string) kgo.CompressionCodec {
	switch name {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// TestFranzRoundTrip produces keyed records with headers and CreateTimes to a
// 3-partition topic created by kadm, once per codec, and reads every
// partition back: records sit where the key partitioner put them, in produce
// order, at their acknowledged offsets, byte for byte.
func TestFranzRoundTrip(t *testing.T) {
	n := StartNode(t)
	const partitions = 3
	for _, codec := range codecNames {
		t.Run(codec, func(t *testing.T) {
			topic := uniqueTopic("franz-" + codec)
			franzCreateTopic(t, n.KafkaAddr, topic, partitions)

			cl := franzClient(t, n.KafkaAddr,
				kgo.ProducerBatchCompression(franzCodec(codec)),
				kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
			)
			recs := makeRecords(codec, 60, recentBase())
			franzProduce(t, cl, topic, recs, 20) // 20 records per call: several per batch

			keyed := kgo.StickyKeyPartitioner(nil).ForTopic(topic)
			used := map[int32]bool{}
			for _, r := range recs {
				if want := int32(keyed.Partition(toKgoRecord(topic, r), partitions)); r.Partition != want {
					t.Fatalf("key %q acknowledged on partition %d, the murmur2 partitioner says %d", r.Key, r.Partition, want)
				}
				used[r.Partition] = true
			}
			if len(used) != partitions {
				t.Fatalf("60 keys landed on %d partitions, want all %d", len(used), partitions)
			}
			franzVerifyPartitions(t, n.KafkaAddr, topic, recs)
		})
	}
}

// TestFranzOffsetsAndTime reads one partition from arbitrary offsets, lists
// start/end offsets, and finds offsets by timestamp, both across batches and
// inside one batch.
func TestFranzOffsetsAndTime(t *testing.T) {
	n := StartNode(t)
	topic := uniqueTopic("franz-offsets")
	franzCreateTopic(t, n.KafkaAddr, topic, 1)
	cl := franzClient(t, n.KafkaAddr, kgo.RecordPartitioner(kgo.ManualPartitioner()))

	// 100 records, CreateTimes 10 ms apart; batches of 1 (the first 40) and
	// of 30 (the rest), so a timestamp can fall inside a batch.
	recs := makeRecords("t", 100, recentBase())
	base := recs[0].Timestamp
	for i := range recs {
		recs[i].Timestamp = base.Add(time.Duration(i) * 10 * time.Millisecond)
	}
	franzProduce(t, cl, topic, recs[:40], 1)
	franzProduce(t, cl, topic, recs[40:], 30)
	for i, r := range recs {
		if r.Offset != int64(i) {
			t.Fatalf("record %d acknowledged at offset %d, want %d", i, r.Offset, i)
		}
	}

	for _, from := range []int64{0, 1, 37, 39, 40, 41, 64, 99} {
		got := franzConsume(t, n.KafkaAddr, topic, 0, kgo.NewOffset().At(from), 1)
		checkRecord(t, fmt.Sprintf("read from offset %d", from), recs[from], got[0].Key, got[0].Value, fromKgoHeaders(got[0].Headers), got[0].Timestamp, got[0].Offset)
	}

	adm := kadm.NewClient(cl)
	ctx := ctxTimeout(t, 30*time.Second)
	start, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list start offsets: %v", err)
	}
	end, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	if o, _ := start.Lookup(topic, 0); o.Err != nil || o.Offset != 0 {
		t.Errorf("start offset = %d (%v), want 0", o.Offset, o.Err)
	}
	if o, _ := end.Lookup(topic, 0); o.Err != nil || o.Offset != 100 {
		t.Errorf("end offset = %d (%v), want 100", o.Offset, o.Err)
	}

	// ListOffsets by time: the first offset whose timestamp is >= the query.
	for _, c := range []struct {
		ms   int64
		want int64
	}{
		{base.UnixMilli() - 1000, 0},
		{base.UnixMilli(), 0},
		{base.UnixMilli() + 1, 1},
		{base.UnixMilli() + 10*17 - 3, 17},  // single-record batches
		{base.UnixMilli() + 10*40, 40},      // first record of a 30-record batch
		{base.UnixMilli() + 10*55 - 5, 55},  // inside a batch
		{base.UnixMilli() + 10*99, 99},      // the last record
		{base.UnixMilli() + 10*99 + 1, 100}, // after everything: the end offset
	} {
		listed, err := adm.ListOffsetsAfterMilli(ctx, c.ms, topic)
		if err != nil {
			t.Fatalf("list offsets after %d: %v", c.ms, err)
		}
		o, ok := listed.Lookup(topic, 0)
		if !ok || o.Err != nil || o.Offset != c.want {
			t.Errorf("ListOffsets(timestamp=base%+d ms) = offset %d (err %v), want %d", c.ms-base.UnixMilli(), o.Offset, o.Err, c.want)
		}
	}

	// A consumer positioned by time starts at the right record.
	got := franzConsume(t, n.KafkaAddr, topic, 0, kgo.NewOffset().AfterMilli(base.UnixMilli()+10*73-4), 1)
	if got[0].Offset != 73 {
		t.Errorf("consumer at AfterMilli(base+726ms) started at offset %d, want 73", got[0].Offset)
	}
}

// TestFranzAdminTopics creates topics with configs through kadm, sees them in
// Metadata, refuses a duplicate, and deletes one.
func TestFranzAdminTopics(t *testing.T) {
	n := StartNode(t)
	adm := kadm.NewClient(franzClient(t, n.KafkaAddr))
	ctx := ctxTimeout(t, 30*time.Second)
	topic := uniqueTopic("franz-admin")
	resp, err := adm.CreateTopic(ctx, 4, 1, map[string]*string{
		"retention.ms":  kadm.StringPtr("3600000"),
		"segment.bytes": kadm.StringPtr("1048576"),
	}, topic)
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	if resp.NumPartitions != -1 && resp.NumPartitions != 4 {
		t.Errorf("created with %d partitions, want 4", resp.NumPartitions)
	}
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, topic); err != kerr.TopicAlreadyExists {
		t.Errorf("creating %s twice: %v, want TOPIC_ALREADY_EXISTS", topic, err)
	}
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	d, ok := details[topic]
	if !ok || d.Err != nil || len(d.Partitions) != 4 {
		t.Fatalf("metadata for %s: found %v, err %v, %d partitions; want 4", topic, ok, d.Err, len(d.Partitions))
	}
	for p, pd := range d.Partitions {
		if pd.Leader != int32(n.ID) {
			t.Errorf("partition %d leader %d, want node %d", p, pd.Leader, n.ID)
		}
	}
	rc, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatalf("describe configs: %v", err)
	}
	cfg, err := rc.On(topic, nil)
	if err != nil || cfg.Err != nil {
		t.Fatalf("describe configs of %s: %v / %v", topic, err, cfg.Err)
	}
	found := false
	for _, c := range cfg.Configs {
		if c.Key == "retention.ms" {
			found = true
			if c.MaybeValue() != "3600000" {
				t.Errorf("retention.ms = %q, want 3600000", c.MaybeValue())
			}
		}
	}
	if !found {
		t.Errorf("describe configs of %s has no retention.ms", topic)
	}

	del, err := adm.DeleteTopics(ctx, topic)
	if err != nil || del.Error() != nil {
		t.Fatalf("delete %s: %v / %v", topic, err, del.Error())
	}
	retry.Run(t, 10*time.Second, func() error {
		details, err := adm.ListTopics(ctx)
		if err != nil {
			return err
		}
		if details.Has(topic) {
			return fmt.Errorf("%s still listed after delete", topic)
		}
		return nil
	})
}

// TestFranzAcks produces with acks=0 (no response at all, so a broker that
// answered would break the connection's correlation) and acks=1, then reads
// everything back.
func TestFranzAcks(t *testing.T) {
	n := StartNode(t)
	for _, c := range []struct {
		name string
		acks kgo.Acks
	}{{"acks0", kgo.NoAck()}, {"acks1", kgo.LeaderAck()}} {
		t.Run(c.name, func(t *testing.T) {
			topic := uniqueTopic("franz-" + c.name)
			franzCreateTopic(t, n.KafkaAddr, topic, 1)
			cl := franzClient(t, n.KafkaAddr, kgo.RequiredAcks(c.acks), kgo.DisableIdempotentWrite())
			recs := makeRecords(c.name, 200, recentBase())
			for start := 0; start < len(recs); start += 20 {
				var krs []*kgo.Record
				for i := start; i < start+20; i++ {
					krs = append(krs, toKgoRecord(topic, recs[i]))
				}
				if err := cl.ProduceSync(ctxTimeout(t, 30*time.Second), krs...).FirstErr(); err != nil {
					t.Fatalf("produce %s: %v", c.name, err)
				}
			}
			adm := kadm.NewClient(cl)
			retry.Run(t, 10*time.Second, func() error {
				end, err := adm.ListEndOffsets(ctxTimeout(t, 5*time.Second), topic)
				if err != nil {
					return err
				}
				if o, _ := end.Lookup(topic, 0); o.Offset != int64(len(recs)) {
					return fmt.Errorf("end offset %d (%v), want %d", o.Offset, o.Err, len(recs))
				}
				return nil
			})
			for i := range recs {
				recs[i].Partition, recs[i].Offset = 0, int64(i)
			}
			franzVerifyPartitions(t, n.KafkaAddr, topic, recs)
		})
	}
}

// TestFranzApiVersions checks that the node advertises at least the version
// ranges the clients in these tests (and librdkafka, kafkajs) need.
func TestFranzApiVersions(t *testing.T) {
	n := StartNode(t)
	cl := franzClient(t, n.KafkaAddr)
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctxTimeout(t, 10*time.Second), cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions error %s", errName(resp.ErrorCode))
	}
	have := map[int16]kmsg.ApiVersionsResponseApiKey{}
	for _, k := range resp.ApiKeys {
		have[k.ApiKey] = k
	}
	for _, need := range []struct {
		key      int16
		min, max int16
	}{
		{18, 0, 3}, // ApiVersions
		{3, 1, 12}, // Metadata
		{0, 3, 9},  // Produce
		{1, 4, 12}, // Fetch
		{2, 1, 7},  // ListOffsets
		{19, 2, 5}, // CreateTopics
		{20, 1, 4}, // DeleteTopics
		{32, 1, 4}, // DescribeConfigs
	} {
		k, ok := have[need.key]
		if !ok {
			t.Errorf("%s (key %d) not advertised", kmsg.NameForKey(need.key), need.key)
			continue
		}
		if k.MinVersion > need.min || k.MaxVersion < need.max {
			t.Errorf("%s advertised v%d–%d, need at least v%d–%d", kmsg.NameForKey(need.key), k.MinVersion, k.MaxVersion, need.min, need.max)
		}
	}
}

// TestFranzLogAppendTime: a topic with message.timestamp.type=LogAppendTime
// serves the broker's append time, not the producer's CreateTime, and marks
// the records as such.
func TestFranzLogAppendTime(t *testing.T) {
	n := StartNode(t)
	topic := uniqueTopic("franz-lat")
	adm := kadm.NewClient(franzClient(t, n.KafkaAddr))
	if _, err := adm.CreateTopic(ctxTimeout(t, 10*time.Second), 1, 1, map[string]*string{
		"message.timestamp.type": kadm.StringPtr("LogAppendTime"),
	}, topic); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	cl := franzClient(t, n.KafkaAddr, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	recs := makeRecords("lat", 10, time.Now().Add(-3*time.Hour))
	before := time.Now().Add(-time.Second).Truncate(time.Millisecond)
	franzProduce(t, cl, topic, recs, 10)
	after := time.Now().Add(time.Second)
	got := franzConsume(t, n.KafkaAddr, topic, 0, kgo.NewOffset().AtStart(), len(recs))
	for i, r := range got {
		if r.Attrs.TimestampType() != 1 {
			t.Errorf("offset %d: timestamp type %d, want 1 (LogAppendTime)", r.Offset, r.Attrs.TimestampType())
		}
		if r.Timestamp.Before(before) || r.Timestamp.After(after) {
			t.Errorf("offset %d: timestamp %v is not the append time (produced between %v and %v; CreateTime was %v)", r.Offset, r.Timestamp, before, after, recs[i].Timestamp)
		}
		if string(r.Value) != string(recs[i].Value) {
			t.Errorf("offset %d: value %q, want %q", r.Offset, r.Value, recs[i].Value)
		}
	}
}
