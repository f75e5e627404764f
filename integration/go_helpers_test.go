package integration

// Helpers shared by the Go-client tests (franz-go, sarama, kafka-go, abuse,
// crash, sendfile): the records every client round-trips, and franz-go
// shortcuts for setting up and checking a topic independently of the client
// under test.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// codecNames lists every compression codec Kafka defines; each round trip
// runs once per codec.
var codecNames = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// testHeader is one record header in a client-neutral form.
type testHeader struct{ Key, Value string }

// testRecord is a record as the tests produce it and expect it back.
type testRecord struct {
	Key       []byte
	Value     []byte
	Headers   []testHeader
	Timestamp time.Time // CreateTime, millisecond precision

	// Partition and Offset are filled once the broker acknowledged it.
	Partition int32
	Offset    int64
}

// uniqueTopic returns a fresh, valid topic name for one test.
func uniqueTopic(prefix string) string {
	var b [4]byte
	rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// makeRecords builds n records with distinct keys, values, two headers each
// (one with an empty value) and CreateTimes one millisecond apart starting at
// base. Timestamps are recent so that retention never removes them mid-test.
func makeRecords(tag string, n int, base time.Time) []testRecord {
	base = base.Truncate(time.Millisecond)
	out := make([]testRecord, n)
	for i := range out {
		out[i] = testRecord{
			Key:   []byte(fmt.Sprintf("%s-key-%03d", tag, i)),
			Value: bytes.Repeat([]byte(fmt.Sprintf("%s-value-%03d;", tag, i)), 1+i%7),
			Headers: []testHeader{
				{Key: "seq", Value: fmt.Sprint(i)},
				{Key: "empty", Value: ""},
			},
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		}
	}
	return out
}

// recentBase is a CreateTime base clearly distinct from the broker's clock
// (so LogAppendTime would show) but well inside any retention.
func recentBase() time.Time {
	return time.Now().Add(-37 * time.Minute).Truncate(time.Millisecond)
}

// checkRecord compares a consumed record with the one produced.
func checkRecord(t testing.TB, where string, want testRecord, gotKey, gotValue []byte, gotHeaders []testHeader, gotTime time.Time, gotOffset int64) {
	t.Helper()
	if !bytes.Equal(gotKey, want.Key) {
		t.Errorf("%s offset %d: key %q, want %q", where, gotOffset, gotKey, want.Key)
	}
	if !bytes.Equal(gotValue, want.Value) {
		t.Errorf("%s offset %d: value %q, want %q", where, gotOffset, gotValue, want.Value)
	}
	if !headersEqual(gotHeaders, want.Headers) {
		t.Errorf("%s offset %d: headers %v, want %v", where, gotOffset, gotHeaders, want.Headers)
	}
	if !gotTime.Equal(want.Timestamp) {
		t.Errorf("%s offset %d: timestamp %v, want CreateTime %v", where, gotOffset, gotTime.UTC(), want.Timestamp.UTC())
	}
	if want.Offset >= 0 && gotOffset != want.Offset {
		t.Errorf("%s: record %q came back at offset %d, acknowledged at %d", where, want.Key, gotOffset, want.Offset)
	}
}

func headersEqual(a, b []testHeader) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// byPartition groups acknowledged records by partition, in offset order.
func byPartition(t testing.TB, recs []testRecord) map[int32][]testRecord {
	t.Helper()
	out := map[int32][]testRecord{}
	for _, r := range recs {
		out[r.Partition] = append(out[r.Partition], r)
	}
	for p, rs := range out {
		for i := 1; i < len(rs); i++ {
			if rs[i].Offset <= rs[i-1].Offset {
				t.Fatalf("partition %d: acknowledged offsets not increasing in produce order: %d then %d", p, rs[i-1].Offset, rs[i].Offset)
			}
		}
	}
	return out
}

// ctxTimeout is a context for one step of a test.
func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// franzClient is a franz-go client for addr, closed when the test ends.
func franzClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.RequestRetries(3),
		kgo.RetryTimeout(20 * time.Second),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatalf("franz-go client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// franzCreateTopic creates a topic with kadm and fails the test on any error.
func franzCreateTopic(t testing.TB, addr, topic string, partitions int32) {
	t.Helper()
	adm := kadm.NewClient(franzClient(t, addr))
	resp, err := adm.CreateTopic(ctxTimeout(t, 20*time.Second), partitions, 1, nil, topic)
	if err != nil {
		t.Fatalf("create topic %s (%d partitions): %v", topic, partitions, err)
	}
	if resp.NumPartitions != -1 && resp.NumPartitions != partitions {
		t.Fatalf("create topic %s: response says %d partitions, asked %d", topic, resp.NumPartitions, partitions)
	}
}

// franzProduce produces recs with acks=all, one ProduceSync per chunk of
// perBatch records, and fills in each record's partition and offset.
func franzProduce(t testing.TB, cl *kgo.Client, topic string, recs []testRecord, perBatch int) {
	t.Helper()
	for start := 0; start < len(recs); start += perBatch {
		end := min(start+perBatch, len(recs))
		krs := make([]*kgo.Record, 0, end-start)
		for i := start; i < end; i++ {
			krs = append(krs, toKgoRecord(topic, recs[i]))
		}
		res := cl.ProduceSync(ctxTimeout(t, 30*time.Second), krs...)
		if err := res.FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
		for i, kr := range krs {
			recs[start+i].Partition = kr.Partition
			recs[start+i].Offset = kr.Offset
		}
	}
}

func toKgoRecord(topic string, r testRecord) *kgo.Record {
	kr := &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp, Partition: r.Partition}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
	}
	return kr
}

func fromKgoHeaders(hs []kgo.RecordHeader) []testHeader {
	out := make([]testHeader, 0, len(hs))
	for _, h := range hs {
		out = append(out, testHeader{Key: h.Key, Value: string(h.Value)})
	}
	return out
}

// franzConsume reads n records of one partition starting at offset with a
// direct (group-less) franz-go consumer.
func franzConsume(t testing.TB, addr, topic string, partition int32, offset kgo.Offset, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: offset}}),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}, opts...)
	cl := franzClient(t, addr, opts...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s/%d: got %d of %d records before the deadline", topic, partition, len(out), n)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("consume %s/%d: %v", topic, p, err)
		})
		out = append(out, fs.Records()...)
	}
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// franzVerifyPartitions reads every partition the records were acknowledged
// on and checks each comes back, in produce order, at its acknowledged offset.
func franzVerifyPartitions(t testing.TB, addr, topic string, recs []testRecord) {
	t.Helper()
	for p, want := range byPartition(t, recs) {
		got := franzConsume(t, addr, topic, p, kgo.NewOffset().At(want[0].Offset), len(want))
		for i, r := range got {
			checkRecord(t, fmt.Sprintf("franz-go read of %s/%d", topic, p), want[i], r.Key, r.Value, fromKgoHeaders(r.Headers), r.Timestamp, r.Offset)
		}
	}
}

// franzRoundTripCheck produces a few records with franz-go and reads them
// back: the proof that the node still serves clients after a fault.
func franzRoundTripCheck(t testing.TB, addr, topic string) {
	t.Helper()
	cl := franzClient(t, addr, kgo.AllowAutoTopicCreation())
	recs := makeRecords("check", 10, recentBase())
	franzProduce(t, cl, topic, recs, 5)
	franzVerifyPartitions(t, addr, topic, recs)
}
