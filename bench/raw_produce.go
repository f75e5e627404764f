package bench

// The --raw mode of produce: pre-encoded Kafka requests on plain TCP
// connections. franz-go builds, compresses and checksums every batch, which
// on a small machine costs as much CPU as the broker does; the raw load has
// the shape of Baseline's (fixed batches behind round trips on loopback), so
// its ratio to the baseline measures the broker.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawRoundTripTimeout bounds one raw request's round trip.
const rawRoundTripTimeout = 30 * time.Second

// rawProduce is the raw produce load: l.Producers connections, connection i
// writing batches of batchRecords records to partition i mod the topic's
// partitions, each keeping l.MaxInflight requests outstanding, until ctx ends
// or limit records (0: no limit, rounded up to whole batches) were sent.
// Each acknowledged batch adds its records to m, its round trip to
// m.latency.
func rawProduce(ctx context.Context, c Cluster, l *ProduceLoad, batchRecords int, m *meter, limit int64) error {
	var acks int16
	switch strings.ToLower(l.Acks) {
	case "1", "leader":
		acks = 1
	case "all", "-1":
		acks = -1
	default:
		return errors.New("--raw measures acknowledged round trips: use --acks 1 or all")
	}
	leaders, err := partitionLeaders(ctx, c, l.Topic)
	if err != nil {
		return err
	}
	value := randomPayload(l.RecordSize)
	batch := rawRecordBatch(batchRecords, value, time.Now().UnixMilli())
	var producers []*rawProducer
	defer func() {
		for _, p := range producers {
			p.c.nc.Close()
		}
	}()
	// Every connection is up before the first sends, so all start together.
	for i := 0; i < l.Producers; i++ {
		p := int32(i % len(leaders))
		conn, err := dialRawKafka(ctx, leaders[p])
		if err != nil {
			return err
		}
		rp, err := newRawProducer(conn, l.Topic, p, acks, batch, int64(batchRecords), int64(batchRecords*len(value)))
		if err != nil {
			conn.nc.Close()
			return err
		}
		producers = append(producers, rp)
	}
	return runRawProducers(ctx, producers, l.MaxInflight, limit, m)
}

// rawProducer is one connection of a raw produce load, sending one
// pre-encoded Produce request, of one record batch to one partition, again
// and again. Baseline sends the same requests to its own
// servers, so both sides of a ratio are measured by this one client.
type rawProducer struct {
	c       *rawConn
	req     *kmsg.ProduceRequest
	frame   []byte
	target  string // topic/partition, for errors
	records int64  // per batch
	bytes   int64  // record value bytes per batch
}

func newRawProducer(c *rawConn, topic string, partition int32, acks int16, batch []byte, records, bytes int64) (*rawProducer, error) {
	version, err := c.version(int16(kmsg.Produce), 3, 9)
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, acks, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return &rawProducer{
		c: c, req: req, records: records, bytes: bytes,
		frame:  kmsg.NewRequestFormatter(kmsg.FormatterClientID(rawClientID)).AppendRequest(nil, req, 0),
		target: fmt.Sprintf("%s/%d", topic, partition),
	}, nil
}

// runRawProducers runs every producer, each keeping inflight requests
// outstanding, until ctx ends or limit records (0: no limit, rounded up to
// whole batches) were sent; the first failure ends the others.
func runRawProducers(ctx context.Context, producers []*rawProducer, inflight int, limit int64, m *meter) error {
	var (
		issued atomic.Int64
		wg     sync.WaitGroup
		mu     sync.Mutex
		first  error
	)
	for _, p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.run(ctx, inflight, &issued, limit, m); err != nil {
				mu.Lock()
				defer mu.Unlock()
				if first == nil {
					first = err
					for _, q := range producers { // the others end at once
						q.c.nc.Close()
					}
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return fmt.Errorf("%w (%d batches failed)", first, m.errors.Load())
	}
	return nil
}

// claim takes the next batch's records from the limit; false when the
// limit is reached.
func claim(issued *atomic.Int64, perBatch, limit int64) bool {
	return limit <= 0 || issued.Add(perBatch)-perBatch < limit
}

// answered checks one response, counting it in m when it is a success.
func (p *rawProducer) answered(resp *kmsg.ProduceResponse, start time.Time, m *meter) error {
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		m.errors.Add(1)
		return fmt.Errorf("produce to %s: answer names %d topics", p.target, len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode); err != nil {
		m.errors.Add(1)
		return fmt.Errorf("produce to %s: %w", p.target, err)
	}
	m.latency.record(time.Since(start))
	m.add(p.records, p.bytes)
	return nil
}

// run sends the producer's request until ctx ends or the limit is reached,
// keeping inflight outstanding.
func (p *rawProducer) run(ctx context.Context, inflight int, issued *atomic.Int64, limit int64, m *meter) error {
	if inflight == 1 {
		// One goroutine writes and then reads, as a client waiting for
		// each answer does: no hand-off between goroutines, and the
		// deadline is re-armed only when half used, since arming a timer
		// wakes the runtime's poller.
		resp := kmsg.NewPtrProduceResponse()
		var deadline time.Time
		for corr := int32(0); ctx.Err() == nil && claim(issued, p.records, limit); corr++ {
			binary.BigEndian.PutUint32(p.frame[8:], uint32(corr)) // after size, key and version
			start := time.Now()
			if deadline.Sub(start) < rawRoundTripTimeout/2 {
				deadline = start.Add(rawRoundTripTimeout)
				p.c.nc.SetDeadline(deadline)
			}
			if _, err := p.c.nc.Write(p.frame); err != nil {
				return fmt.Errorf("produce to %s: %w", p.target, err)
			}
			if err := p.c.readResponse(p.req, resp); err != nil {
				return fmt.Errorf("produce to %s: %w", p.target, err)
			}
			if err := p.answered(resp, start, m); err != nil {
				return err
			}
		}
		return nil
	}

	// A writer keeps inflight requests outstanding; a reader takes the
	// answers in order.
	sem := make(chan struct{}, inflight)
	sent := make(chan time.Time, inflight)
	werr := make(chan error, 1)
	go func() {
		defer close(sent)
		for corr := int32(0); ctx.Err() == nil && claim(issued, p.records, limit); corr++ {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				werr <- nil
				return
			}
			binary.BigEndian.PutUint32(p.frame[8:], uint32(corr)) // after size, key and version
			sent <- time.Now()
			if _, err := p.c.nc.Write(p.frame); err != nil {
				p.c.nc.Close() // the reader stops too
				werr <- fmt.Errorf("produce to %s: %w", p.target, err)
				return
			}
		}
		werr <- nil
	}()
	resp := kmsg.NewPtrProduceResponse()
	var rerr error
	for start := range sent {
		if rerr == nil {
			p.c.nc.SetReadDeadline(time.Now().Add(rawRoundTripTimeout))
			if err := p.c.readResponse(p.req, resp); err != nil {
				rerr = fmt.Errorf("produce to %s: %w", p.target, err)
			} else {
				rerr = p.answered(resp, start, m)
			}
			if rerr != nil {
				p.c.nc.Close()
			}
		}
		<-sem // after a failure, only to let the writer end
	}
	// A failed write closes the connection, failing the read too: the
	// write's error is then the one that says what happened.
	if err := <-werr; err != nil && (rerr == nil || errors.Is(rerr, net.ErrClosed)) {
		return err
	}
	return rerr
}
