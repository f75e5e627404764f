package wire

import (
	"context"
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/partition"
)

// miniBroker is the smallest Handler a real client can produce to and
// consume from: one topic, one partition, batches appended to a real file
// with their base offsets rewritten, fetches answered with file regions.
type miniBroker struct {
	t    *testing.T
	addr string
	file *os.File

	mu      sync.Mutex
	batches []batchPos // in offset order
	next    int64      // next offset
	size    int64      // file size
	grew    chan struct{}
	handled []int32
}

type batchPos struct {
	base, last int64
	pos, size  int64
}

const miniTopic = "t"

func newMiniBroker(t *testing.T) *miniBroker {
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "00000000000000000000.log"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &miniBroker{t: t, file: f, grew: make(chan struct{})}
}

func (b *miniBroker) ServeKafka(ctx context.Context, req *Request) Response {
	b.mu.Lock()
	b.handled = append(b.handled, req.CorrelationID)
	b.mu.Unlock()
	switch body := req.Body.(type) {
	case *kmsg.MetadataRequest:
		return b.metadata(body)
	case *kmsg.ProduceRequest:
		return b.produce(body)
	case *kmsg.ListOffsetsRequest:
		return b.listOffsets(body)
	case *kmsg.FetchRequest:
		return b.fetch(ctx, body)
	}
	return CloseConnection
}

func (b *miniBroker) metadata(req *kmsg.MetadataRequest) Response {
	b.mu.Lock()
	addr := b.addr
	b.mu.Unlock()
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	resp := kmsg.NewPtrMetadataResponse()
	br := kmsg.NewMetadataResponseBroker()
	br.NodeID, br.Host, br.Port = 0, host, int32(p)
	resp.Brokers = []kmsg.MetadataResponseBroker{br}
	resp.ControllerID = 0
	t := kmsg.NewMetadataResponseTopic()
	t.Topic = kmsg.StringPtr(miniTopic)
	pt := kmsg.NewMetadataResponseTopicPartition()
	pt.Partition, pt.Leader, pt.Replicas, pt.ISR = 0, 0, []int32{0}, []int32{0}
	t.Partitions = []kmsg.MetadataResponseTopicPartition{pt}
	resp.Topics = []kmsg.MetadataResponseTopic{t}
	return resp
}

func (b *miniBroker) produce(req *kmsg.ProduceRequest) Response {
	resp := kmsg.NewPtrProduceResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			base, err := b.append(p.Records)
			if err != nil {
				rp.ErrorCode = kerr.CorruptMessage.Code
			}
			rp.BaseOffset = base
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Acks == 0 {
		return NoResponse
	}
	return resp
}

// append stores record batches (v2) with their base offsets assigned.
func (b *miniBroker) append(records []byte) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	first := b.next
	for len(records) >= 61 {
		size := int64(binary.BigEndian.Uint32(records[8:12])) + 12
		count := int64(binary.BigEndian.Uint32(records[57:61]))
		batch := append([]byte(nil), records[:size]...)
		binary.BigEndian.PutUint64(batch, uint64(b.next))
		if _, err := b.file.WriteAt(batch, b.size); err != nil {
			return 0, err
		}
		b.batches = append(b.batches, batchPos{base: b.next, last: b.next + count - 1, pos: b.size, size: size})
		b.next += count
		b.size += size
		records = records[size:]
	}
	close(b.grew)
	b.grew = make(chan struct{})
	return first, nil
}

func (b *miniBroker) listOffsets(req *kmsg.ListOffsetsRequest) Response {
	resp := kmsg.NewPtrListOffsetsResponse()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition, rp.Offset = p.Partition, 0
			if p.Timestamp == -1 {
				rp.Offset = b.next
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// fetch long-polls until data past the offset exists or MaxWaitMillis ends.
func (b *miniBroker) fetch(ctx context.Context, req *kmsg.FetchRequest) Response {
	wait := time.NewTimer(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	defer wait.Stop()
	for {
		resp, grew, empty := b.fetchOnce(req)
		if !empty {
			return resp
		}
		select {
		case <-grew:
		case <-wait.C:
			return resp
		case <-ctx.Done():
			return resp
		}
	}
}

func (b *miniBroker) fetchOnce(req *kmsg.FetchRequest) (*FetchResponse, chan struct{}, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	resp := &FetchResponse{}
	empty := true
	for _, t := range req.Topics {
		ft := FetchTopic{Topic: t.Topic, TopicID: t.TopicID}
		for _, p := range t.Partitions {
			fp := FetchPartition{Partition: p.Partition, HighWatermark: b.next, LastStableOffset: b.next, PreferredReadReplica: -1}
			var regions []partition.Region
			for _, bp := range b.batches {
				if bp.last >= p.FetchOffset {
					regions = append(regions, partition.Region{File: b.file, Position: bp.pos, Length: bp.size})
				}
			}
			if len(regions) > 0 {
				empty = false
				fp.Records = partition.NewSlice(regions, nil)
			}
			ft.Partitions = append(ft.Partitions, fp)
		}
		resp.Topics = append(resp.Topics, ft)
	}
	return resp, b.grew, empty
}

// brokerVersions is what the mini broker handles.
func brokerVersions() map[int16]VersionRange {
	v := testVersions()
	v[2] = VersionRange{1, 7} // ListOffsets
	return v
}

// startMiniBroker serves a miniBroker on loopback.
func startMiniBroker(t *testing.T, mutate func(*Config)) (*Server, *miniBroker) {
	return startMiniBrokerOn(t, mutate, ListenerOptions{})
}

// startMiniBrokerOn is startMiniBroker with listener options (TLS).
func startMiniBrokerOn(t *testing.T, mutate func(*Config), opts ListenerOptions) (*Server, *miniBroker) {
	b := newMiniBroker(t)
	cfg := DefaultConfig()
	cfg.Versions = brokerVersions()
	if mutate != nil {
		mutate(&cfg)
	}
	srv, addr := startListener(t, cfg, b, opts)
	b.mu.Lock()
	b.addr = addr
	b.mu.Unlock()
	return srv, b
}
