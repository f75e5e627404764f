package bench

// The --raw mode of consume: hand-built Fetch requests, one in flight per
// leader, every record batch skipped over by its header and never decoded,
// as the copy baseline's reader drops what it reads.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/recordbatch"
)

// rawConsume reads every partition of topic from start until want records
// (counted from the batches' headers) arrived or ctx ends: one connection
// per leader, one Fetch in flight on each, every record batch skipped over
// by its header, never decoded. Bytes counted are the record batches'. If
// end is not nil, a partition reaching its end offset goes back to its start
// for another pass.
func rawConsume(ctx context.Context, c Cluster, topic string, start, end map[int32]int64, f *FetchLoad, m *meter, want int64) error {
	leaders, err := partitionLeaders(ctx, c, topic)
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
		conn, err := dialRawKafka(ctx, addr)
		if err != nil {
			return err
		}
		defer conn.nc.Close()
		version, err := conn.version(int16(kmsg.Fetch), 4, 12)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := rawFetchLoop(ctx, conn, version, topic, parts, start, end, f, m, want)
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

func rawFetchLoop(ctx context.Context, c *rawConn, version int16, topic string, parts []int32, start, end map[int32]int64, f *FetchLoad, m *meter, want int64) error {
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
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(f.MaxWait.Milliseconds()), 1, f.FetchMaxBytes
		req.SessionEpoch = -1 // no fetch session
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for _, p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, next[p], f.PartitionMaxBytes
			rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		began := time.Now()
		c.nc.SetDeadline(began.Add(30*time.Second + f.MaxWait))
		if _, err := c.nc.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID(rawClientID)).AppendRequest(nil, req, corr)); err != nil {
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
	for len(b) >= recordbatch.HeaderSize {
		h, _ := recordbatch.ParseHeader(b) // b holds a header: it cannot fail
		size := h.Size()
		if size < recordbatch.HeaderSize || size > int64(len(b)) {
			break // a partial batch at the end of the response
		}
		last = h.LastOffset()
		records += int64(h.NumRecords)
		bytes += size
		b = b[size:]
	}
	return records, bytes, last
}
