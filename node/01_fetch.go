package node

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/partition"
	"github.com/spool-log/spool/wire"
)

// Fetch: v4-12
//
// Behavior:
// * Records are file regions from partition.Read, below the high watermark
//   (the log end on a single node); wire sends them with sendfile(2). A
//   batch is served exactly as the producer sent it, compressed or not.
// * Response size: MaxBytes across the response and PartitionMaxBytes per
//   partition, except that the first partition with data always gets at
//   least one whole batch (KIP-74), so a batch larger than the limits is
//   never stuck.
// * Long poll: with fewer than MinBytes available and MaxWaitMillis > 0 the
//   request waits on a wake-up channel registered with every partition it
//   asks for; Append signals it. No goroutine polls. It returns at once on
//   any partition error, when the connection closes, or when the node shuts
//   down.
// * Fetch sessions (KIP-227) are not kept: SessionID 0 tells the client to
//   send full requests; a request naming a session id gets
//   FETCH_SESSION_ID_NOT_FOUND. read_committed sees the same data as
//   read_uncommitted (no transactions): LastStableOffset = high watermark.
//
// Version notes:
// * v4: IsolationLevel, LastStableOffset, AbortedTransactions (always null)
// * v5: LogStartOffset
// * v7: sessions (not kept), top-level ErrorCode
// * v9: CurrentLeaderEpoch (not checked: epoch is always 0)
// * v11: Rack, PreferredReadReplica (-1)
// * v12: flexible versions, LastFetchedEpoch (ignored)

// fetchWaits: only a long poll waits (wire.Config.Waits).
func fetchWaits(wreq *wire.Request) bool {
	req, ok := wreq.Body.(*kmsg.FetchRequest)
	return !ok || req.MaxWaitMillis > 0
}

func (n *Node) handleFetch(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.FetchRequest)
	if req.Version >= 7 && req.SessionID != 0 {
		return &wire.FetchResponse{ErrorCode: kerr.FetchSessionIDNotFound.Code}
	}

	var (
		wake     chan struct{}
		deadline = time.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
		timer    *time.Timer
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		if wake != nil {
			n.forEachFetched(req, func(p *localPartition) { p.removeWaiter(wake) })
		}
	}()

	for {
		resp, size, anyErr := n.fetchOnce(req)
		if size >= int64(req.MinBytes) || anyErr || !time.Now().Before(deadline) || n.isClosing() || ctx.Err() != nil {
			n.stats.bytesOut.Add(size) // metricsLoop hands it to go-metrics
			return resp
		}
		resp.Release()
		if wake == nil {
			// Register, then read once more: an append between the
			// read above and the registration would otherwise go
			// unnoticed until the deadline.
			wake = make(chan struct{}, 1)
			n.forEachFetched(req, func(p *localPartition) { p.addWaiter(wake) })
			continue
		}
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
		}
		select {
		case <-wake:
		case <-timer.C:
		case <-ctx.Done():
		case <-n.closing:
		}
	}
}

// forEachFetched calls fn for every open local partition the request names.
func (n *Node) forEachFetched(req *kmsg.FetchRequest, fn func(*localPartition)) {
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			if p := n.partition(rt.Topic, rp.Partition); p != nil {
				fn(p)
			}
		}
	}
}

// fetchOnce reads what is available now. It returns the response, the record
// bytes in it, and whether any partition has an error.
func (n *Node) fetchOnce(req *kmsg.FetchRequest) (*wire.FetchResponse, int64, bool) {
	resp := &wire.FetchResponse{}
	remaining := int64(req.MaxBytes)
	if req.MaxBytes <= 0 {
		remaining = 1 // still return one batch (KIP-74)
	}
	var total int64
	anyErr := false
	for _, rt := range req.Topics {
		ft := wire.FetchTopic{Topic: rt.Topic, TopicID: rt.TopicID}
		for _, rp := range rt.Partitions {
			fp := wire.FetchPartition{
				Partition:            rp.Partition,
				HighWatermark:        -1,
				LastStableOffset:     -1,
				LogStartOffset:       -1,
				PreferredReadReplica: -1,
			}
			code := n.fetchPartition(rt.Topic, rp, &fp, total, &remaining)
			if code != nil {
				fp.ErrorCode = code.Code
				anyErr = true
			}
			total += fp.Records.Size()
			ft.Partitions = append(ft.Partitions, fp)
		}
		resp.Topics = append(resp.Topics, ft)
	}
	return resp, total, anyErr
}

func (n *Node) fetchPartition(topic string, rp kmsg.FetchRequestTopicPartition, fp *wire.FetchPartition, sofar int64, remaining *int64) *kerr.Error {
	p, code := n.leaderPartition(topic, rp.Partition)
	if code != nil {
		return code
	}
	hwm := p.log.EndOffset()
	start := p.log.StartOffset()
	fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset = hwm, hwm, start
	if rp.FetchOffset < start || rp.FetchOffset > hwm {
		return kerr.OffsetOutOfRange
	}
	if rp.FetchOffset == hwm {
		return nil
	}
	limit := min(int64(rp.PartitionMaxBytes), *remaining)
	if limit <= 0 {
		if sofar > 0 {
			return nil // the response is full; the client asks again
		}
		limit = 1 // nothing sent yet: one whole batch regardless (KIP-74)
	}
	s, err := p.log.Read(rp.FetchOffset, int(min(limit, 1<<30)), hwm)
	switch {
	case errors.Is(err, partition.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange
	case errors.Is(err, partition.ErrClosed):
		return kerr.UnknownTopicOrPartition
	case err != nil:
		n.log.WithError(err).WithField("topic", topic).WithField("partition", rp.Partition).Error("read failed")
		return kerr.KafkaStorageError
	}
	fp.Records = s
	*remaining -= s.Size()
	return nil
}
