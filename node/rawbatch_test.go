package node

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/recordbatch"
)

// rawBatch builds an uncompressed batch of values (null keys, one
// timestamp) with the producer id, epoch and sequence tests control.
func rawBatch(pid int64, epoch int16, seq int32, ts int64, values ...string) []byte {
	h := recordbatch.NoProducer()
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = pid, epoch, seq
	h.FirstTimestamp, h.MaxTimestamp, h.LastOffsetDelta = ts, ts, int32(len(values)-1)
	recs := make([]recordbatch.Record, len(values))
	for i, v := range values {
		recs[i] = recordbatch.Record{OffsetDelta: int64(i), Value: []byte(v)}
	}
	b, err := recordbatch.Build(nil, h, recs, nil)
	if err != nil {
		panic(err) // uncompressed: cannot fail
	}
	return b
}

// rawRequest sends req straight to the node, bypassing kgo's routing.
func rawRequest[R kmsg.Response](t testing.TB, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("%s request: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

// produceRaw sends one batch to topic/partition 0 with acks=-1 and returns
// the partition's answer.
func produceRaw(t testing.TB, cl *kgo.Client, topic string, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 0
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := rawRequest[*kmsg.ProduceResponse](t, cl, req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response has %d topics", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

// rawExact sends req at exactly its version over a new connection (kgo
// raises versions to what the broker supports) and decodes the answer.
func rawExact[R kmsg.Response](t testing.TB, addr string, req kmsg.Request) R {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, 7)); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatalf("read response size: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		t.Fatalf("read response: %v", err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	skip := 4 // correlation id
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		skip++ // empty header tags
	}
	if err := resp.ReadFrom(body[skip:]); err != nil {
		t.Fatalf("decode %s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

// rawBatchFix recomputes a hand-edited batch's CRC.
func rawBatchFix(b []byte) []byte {
	recordbatch.SetCRC(b)
	return b
}
