package wire

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkProduceLoopback sends pre-encoded Produce requests over a
// loopback connection to a handler that only answers, so what it measures is
// wire's own cost per request: reading and decoding the frame, the hand-offs
// between goroutines, deadlines and writing the response. "inflight" is how
// many requests the client keeps outstanding. Allocations per op are the
// noise-free figure; compare runs with benchstat:
//
//	go test -run='^$' -bench=ProduceLoopback -benchmem -count=5 ./wire/
func BenchmarkProduceLoopback(b *testing.B) {
	for _, batch := range []int{1 << 10, 16 << 10, 1 << 20} {
		for _, inflight := range []int{1, 8} {
			b.Run(fmt.Sprintf("batch=%dKiB/inflight=%d", batch>>10, inflight), func(b *testing.B) {
				benchmarkProduce(b, batch, inflight)
			})
		}
	}
}

func benchmarkProduce(b *testing.B, batchBytes, inflight int) {
	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	cfg.Log = discardLog()
	_, addr := startServer(b, cfg, HandlerFunc(func(ctx context.Context, req *Request) Response {
		p := req.Body.(*kmsg.ProduceRequest)
		resp := p.ResponseKind().(*kmsg.ProduceResponse)
		for _, t := range p.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			for _, pp := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = pp.Partition
				rp.BaseOffset = int64(len(pp.Records)) // touch the bytes
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}))
	c := dialRaw(b, addr)
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, 1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "bench"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = make([]byte, batchBytes)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1)

	// A writer keeps inflight requests outstanding; the reader below drains
	// the answers and frees a slot per answer.
	slots := make(chan struct{}, inflight)
	done := make(chan error, 1)
	go func() {
		for i := 0; i < b.N; i++ {
			slots <- struct{}{}
			if _, err := c.nc.Write(frame); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	b.SetBytes(int64(batchBytes))
	b.ReportAllocs()
	b.ResetTimer()
	var size [4]byte
	for i := 0; i < b.N; i++ {
		if _, err := io.ReadFull(c.nc, size[:]); err != nil {
			b.Fatal(err)
		}
		if _, err := io.CopyN(io.Discard, c.nc, int64(binary.BigEndian.Uint32(size[:]))); err != nil {
			b.Fatal(err)
		}
		<-slots
	}
	b.StopTimer()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
