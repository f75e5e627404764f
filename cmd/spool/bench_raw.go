package main

// The --raw mode of `spool bench produce` and `consume`: pre-encoded Kafka
// requests on plain TCP connections, with no client library doing work per
// record. franz-go builds, compresses and checksums every batch and decodes
// every fetched record, which on a small machine costs as much CPU as the
// broker does; the raw load has the shape of `spool bench baseline`'s
// (fixed batches behind round trips on loopback), so its ratio to the
// baseline measures the broker.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawFrameMax bounds a response frame the raw client reads.
const rawFrameMax = 256 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// rawConn is one connection speaking the protocol by hand.
type rawConn struct {
	nc       net.Conn
	br       *bufio.Reader
	versions map[int16]int16 // API key → the broker's highest version
	buf      []byte
}

func dialRawKafka(ctx context.Context, addr string) (*rawConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &rawConn{nc: nc, br: bufio.NewReaderSize(nc, 64<<10), versions: map[int16]int16{}}
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0 // every broker answers v0
	if _, err := c.nc.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("spool-bench-raw")).AppendRequest(nil, req, 0)); err != nil {
		nc.Close()
		return nil, fmt.Errorf("api versions to %s: %w", addr, err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	if err := c.readResponse(req, resp); err != nil {
		nc.Close()
		return nil, fmt.Errorf("api versions from %s: %w", addr, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		nc.Close()
		return nil, fmt.Errorf("api versions from %s: %w", addr, err)
	}
	for _, k := range resp.ApiKeys {
		c.versions[k.ApiKey] = k.MaxVersion
	}
	return c, nil
}

// version is the version to send of key: the broker's highest, capped at
// want; an error if the broker does not reach least.
func (c *rawConn) version(key, least, want int16) (int16, error) {
	max, ok := c.versions[key]
	if !ok || max < least {
		return 0, fmt.Errorf("broker does not serve %s v%d or later", kmsg.NameForKey(key), least)
	}
	return min(max, want), nil
}

// readFrame reads one response frame into the connection's buffer.
func (c *rawConn) readFrame() ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > rawFrameMax {
		return nil, fmt.Errorf("response frame of %d bytes", n)
	}
	if cap(c.buf) < int(n) {
		c.buf = make([]byte, n)
	}
	c.buf = c.buf[:n]
	if _, err := io.ReadFull(c.br, c.buf); err != nil {
		return nil, err
	}
	return c.buf, nil
}

// readResponse reads the answer to req into resp. The body aliases the
// connection's buffer until the next read.
func (c *rawConn) readResponse(req kmsg.Request, resp kmsg.Response) error {
	frame, err := c.readFrame()
	if err != nil {
		return err
	}
	body := frame[4:] // correlation ID: answers come in request order
	if req.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		if body, err = skipTags(body); err != nil {
			return err
		}
	}
	resp.SetVersion(req.GetVersion())
	return resp.ReadFrom(body)
}

// skipTags skips a response header's tagged fields.
func skipTags(b []byte) ([]byte, error) {
	n, l := binary.Uvarint(b)
	if l <= 0 {
		return nil, errors.New("bad response header tags")
	}
	b = b[l:]
	for ; n > 0; n-- {
		_, l1 := binary.Uvarint(b)
		if l1 <= 0 {
			return nil, errors.New("bad response header tag")
		}
		size, l2 := binary.Uvarint(b[l1:])
		if l2 <= 0 || uint64(len(b)) < uint64(l1+l2)+size {
			return nil, errors.New("bad response header tag")
		}
		b = b[uint64(l1+l2)+size:]
	}
	return b, nil
}

// encodedBatchBytes bounds the size of a record batch of n records of size
// bytes (rawRecordBatch): its header and at most 16 bytes of framing a
// record.
func encodedBatchBytes(n, size int) int64 {
	return 61 + int64(n)*(int64(size)+16)
}

// rawRecordBatch encodes a RecordBatch v2 of n records, each value a copy
// of value, with no key and no headers, uncompressed, as a non-idempotent
// producer sends it.
func rawRecordBatch(n int, value []byte, ts int64) []byte {
	var recs []byte
	for i := 0; i < n; i++ {
		var body []byte
		body = append(body, 0)                     // attributes
		body = binary.AppendVarint(body, 0)        // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		body = binary.AppendVarint(body, -1)       // null key
		body = binary.AppendVarint(body, int64(len(value)))
		body = append(body, value...)
		body = binary.AppendVarint(body, 0) // no headers
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	b := make([]byte, 61, 61+len(recs))
	binary.BigEndian.PutUint64(b[0:], 0)                    // base offset: the broker assigns it
	binary.BigEndian.PutUint32(b[8:], uint32(49+len(recs))) // length: what follows this field
	binary.BigEndian.PutUint32(b[12:], 0xffffffff)          // partition leader epoch -1
	b[16] = 2                                               // magic
	binary.BigEndian.PutUint16(b[21:], 0)                   // attributes
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))         // last offset delta
	binary.BigEndian.PutUint64(b[27:], uint64(ts))          // first timestamp
	binary.BigEndian.PutUint64(b[35:], uint64(ts))          // max timestamp
	binary.BigEndian.PutUint64(b[43:], 0xffffffffffffffff)  // producer id -1
	binary.BigEndian.PutUint16(b[51:], 0xffff)              // producer epoch -1
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)          // base sequence -1
	binary.BigEndian.PutUint32(b[57:], uint32(n))           // records
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

// rawLeaders maps each partition of topic to its leader's address.
func rawLeaders(ctx context.Context, g *globals, topic string) (map[int32]string, error) {
	adm, closeAdm, err := g.admin(ctx)
	if err != nil {
		return nil, err
	}
	defer closeAdm()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	t, ok := md.Topics[topic]
	if !ok || t.Err != nil || len(t.Partitions) == 0 {
		return nil, fmt.Errorf("metadata of %s: no partitions (%v)", topic, t.Err)
	}
	addrs := map[int32]string{}
	for _, b := range md.Brokers {
		addrs[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	out := map[int32]string{}
	for _, p := range t.Partitions {
		addr, ok := addrs[p.Leader]
		if !ok {
			return nil, fmt.Errorf("partition %s/%d has no reachable leader", topic, p.Partition)
		}
		out[p.Partition] = addr
	}
	return out, nil
}

// rawRoundTripTimeout bounds one raw request's round trip.
const rawRoundTripTimeout = 30 * time.Second

// rawProduce is the raw produce load: l.producers connections, connection i
// writing batches of batchRecords records to partition i mod the topic's
// partitions, each keeping l.inflight requests outstanding, until ctx ends
// or limit records (0: no limit, rounded up to whole batches) were sent.
// Each acknowledged batch adds its records to m, its round trip to
// m.latency.
func rawProduce(ctx context.Context, g *globals, l *produceLoad, batchRecords int, m *meter, limit int64) error {
	var acks int16
	switch strings.ToLower(l.acks) {
	case "1", "leader":
		acks = 1
	case "all", "-1":
		acks = -1
	default:
		return errors.New("--raw measures acknowledged round trips: use --acks 1 or all")
	}
	leaders, err := rawLeaders(ctx, g, l.topic)
	if err != nil {
		return err
	}
	value := randomPayload(l.recordSize)
	batch := rawRecordBatch(batchRecords, value, time.Now().UnixMilli())
	var producers []*rawProducer
	defer func() {
		for _, p := range producers {
			p.c.nc.Close()
		}
	}()
	// Every connection is up before the first sends, so all start together.
	for i := 0; i < l.producers; i++ {
		p := int32(i % len(leaders))
		c, err := dialRawKafka(ctx, leaders[p])
		if err != nil {
			return err
		}
		rp, err := newRawProducer(c, l.topic, p, acks, batch, int64(batchRecords), int64(batchRecords*len(value)))
		if err != nil {
			c.nc.Close()
			return err
		}
		producers = append(producers, rp)
	}
	return runRawProducers(ctx, producers, l.inflight, limit, m)
}

// rawProducer is one connection of a raw produce load, sending one
// pre-encoded Produce request, of one record batch to one partition, again
// and again. `spool bench baseline` sends the same requests to its own
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
		frame:  kmsg.NewRequestFormatter(kmsg.FormatterClientID("spool-bench-raw")).AppendRequest(nil, req, 0),
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

// rawConsume reads every partition of topic from start until want records
// (counted from the batches' headers) arrived or ctx ends: one connection
// per leader, one Fetch in flight on each, every record batch skipped over
// by its header, never decoded. Bytes counted are the record batches'. If
// end is not nil, a partition reaching its end offset goes back to its start
// for another pass.
func rawConsume(ctx context.Context, g *globals, topic string, start, end map[int32]int64, f *fetchLoad, m *meter, want int64) error {
	leaders, err := rawLeaders(ctx, g, topic)
	if err != nil {
		return err
	}
	byLeader := map[string][]int32{}
	for p, addr := range leaders {
		if _, ok := start[p]; ok {
			byLeader[addr] = append(byLeader[addr], p)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(byLeader))
	var wg sync.WaitGroup
	for addr, parts := range byLeader {
		c, err := dialRawKafka(ctx, addr)
		if err != nil {
			return err
		}
		defer c.nc.Close()
		version, err := c.version(int16(kmsg.Fetch), 4, 12)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := rawFetchLoop(ctx, c, version, topic, parts, start, end, f, m, want)
			if err != nil {
				cancel()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
	}
	return nil
}

func rawFetchLoop(ctx context.Context, c *rawConn, version int16, topic string, parts []int32, start, end map[int32]int64, f *fetchLoad, m *meter, want int64) error {
	next := map[int32]int64{}
	for _, p := range parts {
		next[p] = start[p]
	}
	resp := kmsg.NewPtrFetchResponse()
	for corr := int32(0); m.records.Load() < want; corr++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID = version, -1
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(f.maxWait.Milliseconds()), 1, f.fetchMaxBytes
		req.SessionEpoch = -1 // no fetch session
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for _, p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, next[p], f.partitionMaxBytes
			rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		began := time.Now()
		c.nc.SetDeadline(began.Add(30*time.Second + f.maxWait))
		if _, err := c.nc.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("spool-bench-raw")).AppendRequest(nil, req, corr)); err != nil {
			return fmt.Errorf("fetch %s: %w", topic, err)
		}
		if err := c.readResponse(req, resp); err != nil {
			return fmt.Errorf("fetch %s: %w", topic, err)
		}
		m.latency.record(time.Since(began))
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("fetch %s: %w", topic, err)
		}
		var recs, byts int64
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return fmt.Errorf("fetch %s/%d: %w", topic, p.Partition, err)
				}
				n, b, last := walkBatches(p.RecordBatches)
				if last >= 0 {
					next[p.Partition] = last + 1
				}
				if e, ok := end[p.Partition]; ok && next[p.Partition] >= e {
					next[p.Partition] = start[p.Partition] // another pass
				}
				recs += n
				byts += b
			}
		}
		m.add(recs, byts)
	}
	return nil
}

// walkBatches counts the whole record batches in b by their headers,
// returning records, bytes and the last offset (-1 if none).
func walkBatches(b []byte) (records, bytes, last int64) {
	last = -1
	for len(b) >= 61 {
		size := 12 + int64(int32(binary.BigEndian.Uint32(b[8:])))
		if size < 61 || size > int64(len(b)) {
			break // a partial batch at the end of the response
		}
		base := int64(binary.BigEndian.Uint64(b))
		last = base + int64(int32(binary.BigEndian.Uint32(b[23:])))
		records += int64(int32(binary.BigEndian.Uint32(b[57:])))
		bytes += size
		b = b[size:]
	}
	return records, bytes, last
}
