package node

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/access"
	"github.com/spool-log/spool/node/authz"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/topics"
	"github.com/spool-log/spool/partition"
	"github.com/spool-log/spool/wire"
)

// Produce: v0-12 advertised, v3-12 served
//
// Behavior:
// * Each partition's records must be exactly one RecordBatch v2 (Kafka's rule
//   for magic 2); partition.Append validates it (length, magic, CRC, counts)
//   and stores it byte for byte, compressed or not, after rewriting its base
//   offset.
// * Every partition goes through its replica (node/replica): Append stamps
//   the replica's leader epoch into the batch and returns once the leader's
//   log holds it (acks 1); acks -1 then waits for the commit point
//   (WaitCommitted). With a single copy a batch is committed when appended;
//   with the every-append flush policy Append has fsynced before it returns,
//   so acks=-1 (and 1) answer only after the bytes are durable. acks=0 gets
//   no response; if any partition failed the connection is closed instead,
//   as Kafka does, so the client refreshes its metadata.
// * Idempotent producers: sequence numbers are checked per producer and
//   partition (last five batches remembered). A retried batch that was
//   already written answers with its original offset; a gap is
//   OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch INVALID_PRODUCER_EPOCH.
// * Control batches are refused: only the transaction coordinator writes
//   them (markers, node/coord). A transactional batch is accepted only
//   from a producer whose ongoing transaction holds the partition: the
//   first of each transaction is verified with the transaction's
//   coordinator (KIP-890 part 1's check), INVALID_TXN_STATE otherwise, or
//   if its transaction ends (a marker) before it is appended.
// * The records point into a pooled frame buffer that wire reuses once the
//   response is written: nothing here may keep them past the handler's
//   return (Append writes them; producer state keeps header values only).
// * No leader-epoch check: Produce carries no CurrentLeaderEpoch at any
//   version (KIP-320 added it to Fetch, ListOffsets and
//   OffsetForLeaderEpoch only); a node that does not lead answers
//   NOT_LEADER_OR_FOLLOWER.
// * Unknown topics are auto-created when allowed, as Kafka does.
// * Internal topics (__consumer_offsets) get INVALID_TOPIC_EXCEPTION, as in
//   Kafka: only the group coordinator appends to them.
// * Quotas (node/quota, node/access/quotas.go): the record bytes of the request
//   count against the client's producer_byte_rate; over it, the response
//   carries ThrottleMillis and the connection is muted for as long after
//   it (KIP-219; acks=0 too, with no response). Every version is muted
//   after its response rather than answered late as Kafka does before
//   v6: the client waits either way.
// * Authorization: WRITE on the topic, else TOPIC_AUTHORIZATION_FAILED
//   (asked before the topic's existence, so a refused client learns
//   nothing of it); auto-creation on produce also needs CREATE on the
//   cluster or the topic, else UNKNOWN_TOPIC_OR_PARTITION. A transactional
//   id needs WRITE on it (and is refused anyway: no transactions).
//
// Version notes:
// * v0-2: message sets v0/v1, which Spool does not store: every partition
//   gets UNSUPPORTED_FOR_MESSAGE_FORMAT. They are advertised only because
//   librdkafka decides whether it may send gzip, snappy or lz4 batches by
//   checking that the broker's Produce range includes v0; it then produces
//   with v3+ like every other client.
// * v3: RecordBatch format, transactional id
// * v5: LogStartOffset in response
// * v8: RecordErrors and ErrorMessage in response
// * v9: flexible versions
// * v10: a NOT_LEADER_OR_FOLLOWER partition names its CurrentLeader (tagged)
//   and the response lists that leader's endpoint in NodeEndpoints
//   (KIP-951), so the client redirects without a metadata round trip; its
//   leader and epoch are Metadata's (the leader's claim, node/leadership).
// * v11: TRANSACTION_ABORTABLE may be returned (never here)
// * v12: transactions v2 (KIP-890 part 2: a transactional produce adds its
//   partition to the transaction implicitly). Spool offers transactions
//   v1 only and advertises no transaction.version feature, so clients
//   add partitions explicitly (franz-go caps transactional produce at v11
//   then); a v12 transactional batch is checked as above.
// * v13 (topic ids, Kafka 4.2) is not offered.

func (n *Node) handleProduce(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	failed := false
	var leaders map[int32]bool // brokers named by a CurrentLeader (v10+)
	who := n.access.Requester(ctx, wreq)
	var bytes int64 // what the client's producer_byte_rate counts

	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		topicErr := n.produceTopicError(who, req, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			bytes += int64(len(rp.Records))
			if topicErr != nil {
				sp.ErrorCode = topicErr.Code
			} else {
				n.producePartition(ctx, rt.Topic, rp, &sp, req)
			}
			if sp.ErrorCode != 0 {
				failed = true
			}
			if sp.ErrorCode == kerr.NotLeaderForPartition.Code && req.Version >= 10 {
				if leader, epoch := n.leaders.Current(rt.Topic, rp.Partition); leader >= 0 {
					sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = leader, epoch
					if leaders == nil {
						leaders = make(map[int32]bool)
					}
					leaders[leader] = true
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(leaders) > 0 {
		for _, b := range n.cluster.BrokersOn(n.access.ListenerName(ctx)) {
			if leaders[b.ID] {
				pb := kmsg.NewProduceResponseBroker()
				pb.NodeID, pb.Host, pb.Port = b.ID, b.Host, b.Port
				if b.Rack != "" {
					pb.Rack = kmsg.StringPtr(b.Rack)
				}
				resp.Brokers = append(resp.Brokers, pb)
			}
		}
	}

	if d := n.access.ProduceQuota(ctx, wreq, bytes); d > 0 {
		resp.ThrottleMillis = max(resp.ThrottleMillis, access.ThrottleMillis(d))
	}
	if req.Acks == 0 {
		if failed {
			return wire.CloseConnection
		}
		return wire.NoResponse
	}
	return resp
}

// produceTopicError checks what applies to a whole topic.
func (n *Node) produceTopicError(who authz.Requester, req *kmsg.ProduceRequest, topic string) *kerr.Error {
	if req.Version < 3 {
		return kerr.UnsupportedForMessageFormat
	}
	switch req.Acks {
	case -1, 0, 1:
	default:
		return kerr.InvalidRequiredAcks
	}
	if req.TransactionID != nil && *req.TransactionID != "" && !who.MayTransactionalID(kmsg.ACLOperationWrite, *req.TransactionID) {
		return kerr.TransactionalIDAuthorizationFailed
	}
	if !who.MayTopic(kmsg.ACLOperationWrite, topic) {
		return kerr.TopicAuthorizationFailed
	}
	if err := membership.ValidateTopicName(topic); err != nil || topics.IsInternal(topic) {
		return kerr.InvalidTopicException
	}
	// Partition 0 tells whether the topic exists without copying its
	// entry, which for a topic of thousands of partitions is thousands of
	// replica lists per request.
	if _, _, ok := n.catalog.Partition(topic, 0); !ok {
		if !n.cfg.AutoCreateTopics || !who.MayCreateTopic(topic) {
			return kerr.UnknownTopicOrPartition
		}
		if kerrOf(n.parts.AutoCreate(topic)) != nil {
			return kerr.UnknownTopicOrPartition
		}
	}
	return nil
}

func (n *Node) producePartition(ctx context.Context, topic string, rp kmsg.ProduceRequestTopicPartition, sp *kmsg.ProduceResponseTopicPartition, req *kmsg.ProduceRequest) {
	fail := func(e *kerr.Error, msg string) {
		sp.ErrorCode = e.Code
		sp.BaseOffset = -1
		sp.LogAppendTime = -1
		if req.Version >= 8 && msg != "" {
			sp.ErrorMessage = &msg
		}
	}
	p, errCode := n.leaderPartition(topic, rp.Partition)
	if errCode != nil {
		fail(errCode, "")
		return
	}
	records := rp.Records
	if len(records) > int(p.CurrentSettings().MaxMessageBytes) {
		fail(kerr.MessageTooLarge, "")
		return
	}
	h, err := partition.ParseBatchHeader(records)
	if err != nil {
		fail(kerr.CorruptMessage, err.Error())
		return
	}
	if h.Size() != int64(len(records)) {
		if h.Size() < int64(len(records)) && h.Size() > 0 {
			fail(kerr.InvalidRecord, "a produce request must hold exactly one record batch per partition")
		} else {
			fail(kerr.CorruptMessage, "batch length does not match the records size")
		}
		return
	}
	if h.Control() {
		fail(kerr.InvalidRecord, "control batches are written by the broker only")
		return
	}
	var verifiedMarkers uint64
	if h.Transactional() {
		if req.TransactionID == nil || *req.TransactionID == "" || h.ProducerID < 0 {
			fail(kerr.InvalidTxnState, "a transactional batch needs the request's transactional id")
			return
		}
		var code int16
		if verifiedMarkers, code = n.coords.Txns.VerifyBatch(ctx, p, *req.TransactionID, h, topic); code != 0 {
			fail(kerr.ErrorForCode(code).(*kerr.Error), "")
			return
		}
	}

	acks := replica.Acks(req.Acks)
	if acks == replica.AcksAll {
		if min := p.CurrentSettings().MinInsyncReplicas; int32(len(p.Replica.ISR())) < min {
			fail(kerr.NotEnoughReplicas, "")
			return
		}
	}
	// The request's timeout bounds the wait for the commit (acks=all), not
	// the leader's own append, which an idempotent producer's state must
	// see through.
	ctx, cancel := context.WithTimeout(ctx, time.Duration(max(req.TimeoutMillis, 0))*time.Millisecond)
	defer cancel()

	// Only an idempotent producer's batches need the sequence check and
	// the append as one step; the others do not queue behind them.
	idempotent := h.ProducerID >= 0
	var (
		pending *replica.Pending
		start   time.Time
	)
	if idempotent {
		// The sequence check and the batch's place in the log's order
		// (Enqueue) as one step; the leader's round that writes it is
		// waited for outside, so the partition's other producers,
		// DescribeProducers and the retention loop do not queue behind
		// its disk.
		var enq hosted.Enqueued
		enq, err = p.EnqueueIdempotent(h, records, verifiedMarkers)
		var refused *hosted.Refused
		if errors.As(err, &refused) {
			fail(refused.Err, refused.Msg)
			return
		}
		if dup := enq.Dup; dup != nil {
			dupOffset := dup.Offset
			if dup.Pending != nil {
				// The first copy is still on its way into the leader's
				// log: its offset is known once it is there.
				info, _, err := dup.Pending.Appended()
				if err != nil {
					fail(kerr.NotLeaderForPartition, "")
					return
				}
				dupOffset = info.BaseOffset
			}
			if acks == replica.AcksAll {
				// The first copy of this batch may not be committed yet:
				// answer as for it, once it is, as Kafka does. The
				// producer state a leader checks against is the committed
				// log plus its own proposals of this epoch, so if it still
				// leads in that epoch once the high watermark passed the
				// batch, the batch at dupOffset is that one and committed;
				// a deposed leader (paused, cut off) is not confirmed and
				// must not say so.
				if err := p.Replica.WaitCommitted(ctx, dupOffset); err != nil {
					fail(kerr.RequestTimedOut, "")
					return
				}
				if err := p.Replica.ConfirmLeader(ctx, dup.Epoch); err != nil {
					fail(kerr.NotLeaderForPartition, "")
					return
				}
			}
			sp.BaseOffset = dupOffset
			sp.LogAppendTime = -1
			sp.LogStartOffset = p.Replica.LogStartOffset()
			return
		}
		pending, start = enq.Pending, enq.Start
	} else {
		start = time.Now()
		pending, err = p.Replica.Enqueue(records)
	}
	var info partition.AppendInfo
	var commit replica.Commit
	if err == nil {
		info, commit, err = pending.Appended()
		if idempotent {
			p.SettleProducer(h.ProducerID, pending, info, err)
		}
	}
	if err == nil && acks == replica.AcksAll {
		// Outside the append lock: with replication the commit takes a round
		// trip, and the partition's next batches need not queue behind it.
		err = commit.Wait(ctx)
		if err != nil && ctx.Err() != nil {
			fail(kerr.RequestTimedOut, "") // written, but not known to be committed
			return
		}
		if err == nil {
			n.repl.ObserveCommit(p.Replica.Replicated(), start)
		}
	}

	if err != nil {
		var be *partition.BatchError
		switch {
		case errors.As(err, &be) && be.Kind == partition.Invalid:
			fail(kerr.InvalidRecord, be.Error())
		case errors.As(err, &be):
			fail(kerr.CorruptMessage, be.Error())
		case errors.Is(err, replica.ErrNotLeader):
			fail(kerr.NotLeaderForPartition, "")
		case errors.Is(err, replica.ErrTooLarge):
			fail(kerr.MessageTooLarge, err.Error())
		case errors.Is(err, replica.ErrOutcomeUnknown), errors.Is(err, context.DeadlineExceeded):
			fail(kerr.RequestTimedOut, "")
		case errors.Is(err, partition.ErrClosed):
			fail(kerr.UnknownTopicOrPartition, "")
		default:
			n.log.WithError(err).WithField("topic", topic).WithField("partition", rp.Partition).Error("append failed")
			fail(kerr.KafkaStorageError, "")
		}
		return
	}

	sp.BaseOffset = info.BaseOffset
	sp.LogAppendTime = -1
	if p.CurrentSettings().LogAppendTime {
		sp.LogAppendTime = info.LogAppendTime
	}
	sp.LogStartOffset = p.Replica.LogStartOffset()

	n.stats.bytesIn.Add(int64(info.Bytes))
	n.stats.recordsIn.Add(int64(info.RecordCount))
	n.stats.batchesIn.Add(1)
	p.ProducedBytes.Add(int64(info.Bytes))
	p.ProducedRecords.Add(int64(info.RecordCount))
}

// leaderPartition returns the local partition if this node leads it, or the
// error a client should get: unknown topic or partition, leader not
// available, or not the leader. Whether this node serves it is its
// replica's word alone; which error, n.leaders.Of's.
func (n *Node) leaderPartition(topic string, index int32) (*localPartition, *kerr.Error) {
	id, _, ok := n.catalog.Partition(topic, index)
	if !ok {
		return nil, kerr.UnknownTopicOrPartition
	}
	p := n.parts.Current(topic, index, id)
	if p != nil && p.Replica.Leader() == n.cfg.NodeID {
		return p, nil
	}
	leader := int32(-1)
	if spec, ok := n.catalog.Topic(topic); ok && spec.ID == id {
		leader = n.leaders.LeaderOf(spec, index)
	}
	switch {
	case leader < 0, leader == n.cfg.NodeID:
		// None known, or this node by another's word while its replica
		// does not lead yet (or is not open here): the client retries.
		return nil, kerr.LeaderNotAvailable
	default:
		return nil, kerr.NotLeaderForPartition
	}
}
