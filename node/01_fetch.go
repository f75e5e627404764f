package node

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/authz"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/tier"
	"github.com/spool-log/spool/node/topics"
	"github.com/spool-log/spool/partition"
	"github.com/spool-log/spool/wire"
)

// Fetch: v4-17
//
// Behavior:
// * Records are file regions from the partition's replica (node/replica),
//   below its high watermark (the commit point; the log end with a single
//   copy); wire sends them with sendfile(2). A batch is served exactly as
//   the producer sent it, compressed or not.
// * Response size: MaxBytes across the response and PartitionMaxBytes per
//   partition, except that the first partition with data always gets at
//   least one whole batch (KIP-74), so a batch larger than the limits is
//   never stuck.
// * Quotas (node/quota, node/access/quotas.go): the record bytes of the
//   response count against the client's consumer_byte_rate, and MaxBytes
//   is bounded by what the quota lets through in its window. A response
//   that takes the rate over the quota is not sent, as in Kafka: its
//   bytes are taken back and the client gets an empty response with
//   ThrottleMillis set, its connection muted for as long (KIP-219).
// * Long poll: with fewer than MinBytes available and MaxWaitMillis > 0 the
//   request waits on a wake-up channel registered with the replica of every
//   partition it asks for; the replica signals it when its high watermark
//   moves (or it closes). No goroutine polls. It returns at once on
//   any partition error, when the connection closes, or when the node shuts
//   down.
// * Authorization: READ on each topic, else TOPIC_AUTHORIZATION_FAILED for
//   its partitions (which then answer at once, as any partition error
//   does), decided once per request, not per wait.
// * Fetch sessions (KIP-227) are not kept, as a Kafka broker whose session
//   cache has no slots: a full request (SessionEpoch -1, a sessionless
//   fetch, or 0, which asks for a new session and closes the one it names)
//   is answered in full for every partition it lists, whatever its
//   SessionID, with SessionID 0, which tells the client to go on sending
//   full requests. An incremental request (epoch > 0) names a session that
//   does not exist: FETCH_SESSION_ID_NOT_FOUND.
// * read_committed (IsolationLevel 1) reads only below the partition's
//   last stable offset (the first offset of its oldest open transaction,
//   else the high watermark; node/hosted's TxnIndex), reports it as
//   LastStableOffset, and lists the aborted transactions whose records
//   the range may hold, which the client drops. read_uncommitted reads to
//   the high watermark and reports it as LastStableOffset too (the
//   transaction index is built only for read_committed readers).
// * Topics by id (v13+): each id is looked up in the catalog; an unknown id
//   gets UNKNOWN_TOPIC_ID on each of its partitions.
//
// Version notes:
// * v4: IsolationLevel, LastStableOffset, AbortedTransactions
// * v5: LogStartOffset
// * v7: sessions (not kept), top-level ErrorCode
// * v9: CurrentLeaderEpoch, checked on the leader (KIP-320): older than
//   the replica's leader epoch is FENCED_LEADER_EPOCH, newer
//   UNKNOWN_LEADER_EPOCH, -1 unchecked
// * v11: Rack, PreferredReadReplica (-1)
// * v12: flexible versions, LastFetchedEpoch (ignored)
// * v13: TopicID instead of the topic's name, in request and response
// * v15: ReplicaState replaces ReplicaID (broker-only: clients send -1)
// * v16: CurrentLeader (tagged) on NOT_LEADER_OR_FOLLOWER partitions and
//   NodeEndpoints of those leaders (KIP-951), so a client moves without a
//   metadata round trip; leader and epoch as Metadata has them
// * v17: ReplicaDirectoryId (broker-only, KIP-853; ignored)

// fetchWaits: only a long poll waits (wire.Config.Waits).
func fetchWaits(wreq *wire.Request) bool {
	req, ok := wreq.Body.(*kmsg.FetchRequest)
	return !ok || req.MaxWaitMillis > 0
}

// fetchFull tells whether a fetch is a full one, which needs no session:
// epoch -1 (sessionless) or 0 (a new session), whatever the session id.
func fetchFull(req *kmsg.FetchRequest) bool {
	return req.Version < 7 || req.SessionEpoch == -1 || req.SessionEpoch == 0
}

func (n *Node) handleFetch(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.FetchRequest)
	if !fetchFull(req) {
		return &wire.FetchResponse{ErrorCode: kerr.FetchSessionIDNotFound.Code}
	}
	names := fetchTopicNames(n.catalog, req)
	denied := n.fetchDenied(n.access.Requester(ctx, wreq), req, names)
	waitNames := names // those a long poll waits on: the readable ones
	if denied != nil {
		waitNames = append([]string(nil), names...)
		for i := range denied {
			if denied[i] {
				waitNames[i] = ""
			}
		}
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
			forEachFetched(n.parts, req, waitNames, func(p *localPartition) { p.Replica.RemoveWaiter(wake) })
		}
	}()

	applied, quotaed := n.access.FetchQuotaBound(ctx, wreq, req)
	for {
		resp, size, anyErr := n.fetchOnce(req, names, denied, n.access.ListenerName(ctx))
		if size >= int64(req.MinBytes) || anyErr || !time.Now().Before(deadline) || n.isClosing() || ctx.Err() != nil {
			if quotaed {
				resp, size = n.access.FetchQuota(ctx, applied, resp, size)
			}
			n.stats.bytesOut.Add(size) // metricsLoop hands it to go-metrics
			// Nobody looks at the console: no lookup, no count.
			if n.console != nil && n.console.Sampling() {
				n.parts.CountFetched(resp, names)
			}
			return resp
		}
		resp.Release()
		if wake == nil {
			// Register, then read once more: an append between the
			// read above and the registration would otherwise go
			// unnoticed until the deadline.
			wake = make(chan struct{}, 1)
			forEachFetched(n.parts, req, waitNames, func(p *localPartition) { p.Replica.AddWaiter(wake) })
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

// fetchTopicNames returns the name of each of the request's topics, in
// order: as sent before v13, looked up by id from v13 ("" for an id the
// catalog does not know).
func fetchTopicNames(catalog *topics.Catalog, req *kmsg.FetchRequest) []string {
	names := make([]string, len(req.Topics))
	if req.Version < 13 {
		for i, rt := range req.Topics {
			names[i] = rt.Topic
		}
		return names
	}
	for i, rt := range req.Topics {
		names[i], _ = catalog.TopicName(rt.TopicID) // not a copy of the whole catalog per fetch
	}
	return names
}

// fetchDenied tells, per topic of the request, whether the requester may
// not READ it; nil when it may read them all.
func (n *Node) fetchDenied(who authz.Requester, req *kmsg.FetchRequest, names []string) []bool {
	var denied []bool
	for i, rt := range req.Topics {
		name := names[i]
		if req.Version < 13 {
			name = rt.Topic
		}
		if !who.MayTopic(kmsg.ACLOperationRead, name) {
			if denied == nil {
				denied = make([]bool, len(req.Topics))
			}
			denied[i] = true
		}
	}
	return denied
}

// forEachFetched calls fn for every open local partition the request names.
func forEachFetched(parts *hosted.Host, req *kmsg.FetchRequest, names []string, fn func(*localPartition)) {
	for i, rt := range req.Topics {
		if names[i] == "" {
			continue
		}
		for _, rp := range rt.Partitions {
			if p := parts.Get(names[i], rp.Partition); p != nil {
				fn(p)
			}
		}
	}
}

// fetchOnce reads what is available now, but nothing of the topics
// denied (fetchDenied). It returns the response, the record bytes in it,
// and whether any partition has an error.
func (n *Node) fetchOnce(req *kmsg.FetchRequest, names []string, denied []bool, listener string) (*wire.FetchResponse, int64, bool) {
	resp := &wire.FetchResponse{}
	remaining := int64(req.MaxBytes)
	if req.MaxBytes <= 0 {
		remaining = 1 // still return one batch (KIP-74)
	}
	var total int64
	anyErr := false
	var leaders map[int32]bool // brokers named by a CurrentLeader (v16+)
	for ti, rt := range req.Topics {
		ft := wire.FetchTopic{Topic: rt.Topic, TopicID: rt.TopicID}
		for _, rp := range rt.Partitions {
			fp := wire.NewFetchPartition(rp.Partition)
			var code *kerr.Error
			if denied != nil && denied[ti] {
				code = kerr.TopicAuthorizationFailed
			} else if req.Version >= 13 && !n.catalog.Current(names[ti], rt.TopicID) {
				code = kerr.UnknownTopicID
			} else {
				code = n.fetchPartition(names[ti], rp, &fp, total, &remaining, req.IsolationLevel == 1)
			}
			if code != nil {
				fp.ErrorCode = code.Code
				anyErr = true
				if code == kerr.NotLeaderForPartition && req.Version >= 16 {
					if leader, epoch := n.leaders.Current(names[ti], rp.Partition); leader >= 0 {
						fp.CurrentLeader = &wire.FetchLeader{LeaderID: leader, LeaderEpoch: epoch}
						if leaders == nil {
							leaders = make(map[int32]bool)
						}
						leaders[leader] = true
					}
				}
			}
			total += fp.Records.Size()
			ft.Partitions = append(ft.Partitions, fp)
		}
		resp.Topics = append(resp.Topics, ft)
	}
	if len(leaders) > 0 {
		for _, b := range n.cluster.BrokersOn(listener) {
			if leaders[b.ID] {
				ep := wire.FetchNodeEndpoint{NodeID: b.ID, Host: b.Host, Port: b.Port}
				if b.Rack != "" {
					ep.Rack = kmsg.StringPtr(b.Rack)
				}
				resp.NodeEndpoints = append(resp.NodeEndpoints, ep)
			}
		}
	}
	return resp, total, anyErr
}

func (n *Node) fetchPartition(topic string, rp kmsg.FetchRequestTopicPartition, fp *wire.FetchPartition, sofar int64, remaining *int64, readCommitted bool) *kerr.Error {
	p, code := n.leaderPartition(topic, rp.Partition)
	if code != nil {
		return code
	}
	if e := checkLeaderEpoch(rp.CurrentLeaderEpoch, p.Replica.LeaderEpoch()); e != nil {
		return e
	}
	hwm := p.Replica.HighWatermark()
	start := n.remote(p).LogStart() // below the local start for a tiered partition (node/tier)
	fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset = hwm, hwm, start
	// Above the high watermark but within the log is no error, as in
	// Kafka: a new Raft leader's high watermark may briefly lag the one
	// consumers saw from the old leader until it commits in its own term.
	if rp.FetchOffset < p.Replica.LogStartOffset() && n.remote(p).Gap(rp.FetchOffset) {
		return kerr.OffsetNotAvailable // retried: this replica's record of the store catches up (node/tier)
	}
	if rp.FetchOffset < start || rp.FetchOffset > max(hwm, p.Replica.LogEndOffset()) {
		return kerr.OffsetOutOfRange
	}
	upTo := hwm
	if readCommitted {
		// One fetch scans what the index has not seen; the others answer
		// meanwhile from what that scan has published (node/hosted's TxnIndex).
		err := p.Txns.Refresh(p.Replica, p.Dir)
		upTo = p.Txns.StableOffset(hwm, start)
		if err != nil {
			n.log.WithError(err).WithField("topic", topic).WithField("partition", rp.Partition).Error("scan transactions failed")
			return kerr.KafkaStorageError
		}
		fp.LastStableOffset = upTo
	}
	if rp.FetchOffset >= upTo {
		return nil
	}
	limit := min(int64(rp.PartitionMaxBytes), *remaining)
	if limit <= 0 {
		if sofar > 0 {
			return nil // the response is full; the client asks again
		}
		limit = 1 // nothing sent yet: one whole batch regardless (KIP-74)
	}
	var s *partition.Slice
	var err error
	fromStore := rp.FetchOffset < p.Replica.LogStartOffset()
	if fromStore {
		// Tiered: from the store through the chunk cache (node/tier).
		s, err = n.remote(p).Read(rp.FetchOffset, int(min(limit, 1<<30)), upTo)
	} else {
		s, err = p.Replica.ReadUpTo(rp.FetchOffset, int(min(limit, 1<<30)), upTo)
	}
	switch {
	case errors.Is(err, partition.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange
	case errors.Is(err, partition.ErrClosed):
		return kerr.UnknownTopicOrPartition
	case err != nil:
		n.log.WithError(err).WithField("topic", topic).WithField("partition", rp.Partition).Error("read failed")
		return kerr.KafkaStorageError
	}
	var remoteAborted []tier.AbortedTxn
	if readCommitted && fromStore {
		// Below the local start the local index has dropped what the
		// store's segment carries beside it (its txnindex).
		if remoteAborted, err = n.remote(p).Aborted(rp.FetchOffset, s.Next); err != nil {
			s.Release()
			n.log.WithError(err).WithField("topic", topic).WithField("partition", rp.Partition).Error("read aborted transactions from the store failed")
			return kerr.KafkaStorageError
		}
	}
	fp.Records = s
	*remaining -= s.Size()
	if readCommitted {
		// Up to the end of what is sent, as Kafka: the LSO would list
		// every aborted transaction after it too.
		// The aborted list only grows at its end (and loses entries
		// below the log start), so what covers [FetchOffset, Next) is
		// the same now as when the LSO was taken.
		fp.AbortedTransactions = p.Txns.AbortedBetween(rp.FetchOffset, s.Next)
		fp.AbortedTransactions = mergeAborted(fp.AbortedTransactions, remoteAborted)
	}
	return nil
}

// mergeAborted adds the store's aborted transactions to the local index's,
// each once, ordered by first offset as clients take them.
func mergeAborted(local []wire.FetchAborted, remote []tier.AbortedTxn) []wire.FetchAborted {
	if len(remote) == 0 {
		return local
	}
	out := slices.Clone(local)
	have := make(map[wire.FetchAborted]bool, len(local))
	for _, a := range local {
		have[a] = true
	}
	for _, a := range remote {
		if t := (wire.FetchAborted{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset}); !have[t] {
			have[t] = true
			out = append(out, t)
		}
	}
	slices.SortStableFunc(out, func(x, y wire.FetchAborted) int { return cmp.Compare(x.FirstOffset, y.FirstOffset) })
	return out
}
