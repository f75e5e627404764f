package node

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/coord"
	"github.com/spool-log/spool/node/share"
	"github.com/spool-log/spool/wire"
)

// ShareFetch: v1-2
//
// Behavior:
// * Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED
//   for the whole request; READ on each topic, else
//   TOPIC_AUTHORIZATION_FAILED for its partitions. The member id must be
//   1-36 characters (membership is not checked here, as Kafka).
// * Share sessions (node/share): epoch 0 opens one with the request's
//   partitions (closing the member's earlier one and releasing what it
//   held), each later request names the next epoch and adds its topics
//   and forgets ForgottenTopicsData (SHARE_SESSION_NOT_FOUND,
//   INVALID_SHARE_SESSION_EPOCH otherwise), -1 applies the request's
//   acknowledgements, closes the session, releases the member's records
//   on this node and fetches nothing.
// * Piggybacked acknowledgements are applied before fetching, per
//   partition all or none, their outcome in AcknowledgeErrorCode
//   (INVALID_RECORD_STATE for a record the member does not hold).
// * Every partition of the session is fetched on its leader (else
//   NOT_LEADER_OR_FOLLOWER with CurrentLeader and NodeEndpoints): the
//   records available in the share partition's window (released or with a
//   lapsed lock) and new ones past it, while the window holds fewer than
//   its bound of in-flight records, below the high watermark (the last
//   stable offset for a read_committed group, whose aborted records are
//   archived undelivered; control records always are). Each acquired
//   record's lock lasts the group's share.record.lock.duration.ms, told in
//   AcquisitionLockTimeoutMillis. Records are the whole batches holding the
//   acquired ranges; the client keeps only the ranges.
// * MaxRecords bounds the records acquired across the response, MaxBytes
//   the batch bytes (at least one batch is sent).
// * Long poll: with nothing acquired and MaxWaitMillis > 0 the request
//   waits on the replicas' wake-ups (a new high watermark) and no longer
//   than the earliest lock deadline of its share partitions, when a
//   record becomes available again; no goroutine polls.
//
// Version notes:
// * v0: KIP-932's early access; not served (Kafka 4.1+ neither)
// * v1: MaxRecords, BatchSize (a hint, taken as MaxRecords' bound),
//   AcquisitionLockTimeoutMillis
// * v2: ShareAcquireMode (1, record limit: MaxRecords is strict, as it is
//   here in either mode), IsRenewAck (KIP-1222): acknowledgements with
//   RENEW and no fetch; every fetch parameter must be 0 and every
//   partition must carry acknowledgements, else INVALID_REQUEST

func shareFetchWaits(wreq *wire.Request) bool {
	req, ok := wreq.Body.(*kmsg.ShareFetchRequest)
	return !ok || req.MaxWaitMillis > 0
}

// shareAckBatches converts a partition's acknowledgement batches.
func shareAckBatches[T any](in []T, conv func(T) share.AckBatch) []share.AckBatch {
	if len(in) == 0 {
		return nil
	}
	out := make([]share.AckBatch, len(in))
	for i, b := range in {
		out[i] = conv(b)
	}
	return out
}

func (n *Node) handleShareFetch(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	var groupID, memberID string
	if req.GroupID != nil {
		groupID = *req.GroupID
	}
	if req.MemberID != nil {
		memberID = *req.MemberID
	}
	_, parts := n.coords.Shares.Get()
	cfg := parts.GroupConfig(groupID)
	resp.AcquisitionLockTimeoutMillis = int32(cfg.LockDuration.Milliseconds())
	who := n.requesterOf(ctx, wreq)
	if !who.mayGroup(kmsg.ACLOperationRead, groupID) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	if groupID == "" || memberID == "" || len(memberID) > 36 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	renew := req.Version >= 2 && req.IsRenewAck
	if renew {
		if req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWaitMillis != 0 {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp
		}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if len(p.AcknowledgementBatches) == 0 {
					resp.ErrorCode = kerr.InvalidRequest.Code
					return resp
				}
			}
		}
	}

	out := newShareFetchOut(resp)
	var add, forget []share.TopicPartition
	acks := map[share.TopicPartition][]share.AckBatch{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := share.TopicPartition{TopicID: t.TopicID, Partition: p.Partition}
			add = append(add, tp)
			if b := shareAckBatches(p.AcknowledgementBatches, func(b kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) share.AckBatch {
				return share.AckBatch{First: b.FirstOffset, Last: b.LastOffset, Types: b.AcknowledgeTypes}
			}); b != nil {
				acks[tp] = b
			}
		}
	}
	for _, t := range req.ForgottenTopicsData {
		for _, p := range t.Partitions {
			forget = append(forget, share.TopicPartition{TopicID: t.TopicID, Partition: p})
		}
	}

	applyAcks := func() {
		for tp, batches := range acks {
			code := n.shareAcknowledge(who, groupID, memberID, tp, batches, renew)
			out.partition(tp).AcknowledgeErrorCode = code
		}
	}
	switch {
	case req.ShareSessionEpoch == share.FinalEpoch:
		applyAcks()
		if e := parts.CloseSession(groupID, memberID); e != nil {
			resp.ErrorCode = e.Code
		}
		return resp
	case req.ShareSessionEpoch < 0:
		resp.ErrorCode = kerr.InvalidShareSessionEpoch.Code
		return resp
	}
	session, e := parts.Session(groupID, memberID, req.ShareSessionEpoch, add, forget)
	if e != nil {
		resp.ErrorCode = e.Code
		return resp
	}
	if req.ShareSessionEpoch == 0 {
		// A new session holds nothing: acknowledgements of an old one's
		// records have nothing to act on (they were released with it).
		for tp := range acks {
			out.partition(tp).AcknowledgeErrorCode = kerr.InvalidShareSessionEpoch.Code
		}
	} else {
		applyAcks()
	}
	if renew {
		return resp
	}
	n.shareFetchWait(ctx, req, who, groupID, memberID, session, out)
	out.endpoints(n, n.listenerNameOf(ctx))
	return resp
}

// shareFetchWait fetches the session's partitions, waiting as the
// request allows while nothing is acquired.
func (n *Node) shareFetchWait(ctx context.Context, req *kmsg.ShareFetchRequest, who requester, groupID, memberID string, session []share.TopicPartition, out *shareFetchOut) {
	_, parts := n.coords.Shares.Get()
	deadline := time.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
	var (
		wake   chan struct{}
		timer  *time.Timer
		waited []*localPartition
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		for _, p := range waited {
			p.Replica.RemoveWaiter(wake)
		}
	}()
	for {
		led, got := n.shareFetchOnce(req, who, groupID, memberID, session, out)
		if got || !time.Now().Before(deadline) || n.isClosing() || ctx.Err() != nil {
			return
		}
		if wake == nil {
			// Register, then fetch once more: a record appended in between
			// would otherwise wait for the deadline.
			wake = make(chan struct{}, 1)
			for _, p := range led {
				p.Replica.AddWaiter(wake)
			}
			waited = led
			continue
		}
		until := deadline
		if e := parts.NextExpiry(groupID, session); !e.IsZero() && e.Before(until) {
			until = e.Add(time.Millisecond)
		}
		if timer == nil {
			timer = time.NewTimer(time.Until(until))
		} else {
			timer.Reset(time.Until(until))
		}
		select {
		case <-wake:
		case <-timer.C:
		case <-ctx.Done():
		case <-n.closing:
		}
	}
}

// shareFetchOnce fetches every partition of the session once. It returns
// the partitions this node leads and whether the response should go now
// (records acquired, or a partition's error).
func (n *Node) shareFetchOnce(req *kmsg.ShareFetchRequest, who requester, groupID, memberID string, session []share.TopicPartition, out *shareFetchOut) ([]*localPartition, bool) {
	_, parts := n.coords.Shares.Get()
	maxRecords := int(req.MaxRecords)
	if req.Version < 1 || maxRecords <= 0 {
		maxRecords = 500
	}
	bytesLeft := int(req.MaxBytes)
	if bytesLeft <= 0 {
		bytesLeft = 1
	}
	var led []*localPartition
	send := false
	for _, tp := range session {
		if maxRecords <= 0 {
			break
		}
		name, ok := n.catalog.TopicName(tp.TopicID)
		code := int16(0)
		var p *localPartition
		switch {
		case !ok:
			code = kerr.UnknownTopicID.Code
		case !who.mayTopic(kmsg.ACLOperationRead, name):
			code = kerr.TopicAuthorizationFailed.Code
		default:
			var e *kerr.Error
			if p, e = n.leaderPartition(name, tp.Partition); e != nil {
				code = e.Code
				if e == kerr.NotLeaderForPartition {
					if leader, epoch := n.currentLeader(name, tp.Partition); leader >= 0 {
						sp := out.partition(tp)
						sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = leader, epoch
						out.leaders[leader] = true
					}
				}
			}
		}
		if code != 0 {
			out.partition(tp).ErrorCode = code
			send = true
			continue
		}
		led = append(led, p)
		got, e := parts.Fetch(share.Key{Group: groupID, TopicPartition: tp}, memberID, coord.ShareLog(p), maxRecords, max(bytesLeft, 1))
		if e != nil {
			out.partition(tp).ErrorCode = e.Code
			send = true
			continue
		}
		if len(got.Ranges) == 0 {
			continue
		}
		sp := out.partition(tp)
		sp.Records = append(sp.Records, got.Records...)
		for _, r := range got.Ranges {
			sp.AcquiredRecords = append(sp.AcquiredRecords, kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{FirstOffset: r.First, LastOffset: r.Last, DeliveryCount: r.DeliveryCount})
			maxRecords -= int(r.Last - r.First + 1)
		}
		bytesLeft -= len(got.Records)
		send = true
	}
	return led, send
}

// shareFetchOut builds a ShareFetch response partition by partition.
type shareFetchOut struct {
	resp    *kmsg.ShareFetchResponse
	at      map[share.TopicPartition][2]int // topic index, partition index
	leaders map[int32]bool
}

func newShareFetchOut(resp *kmsg.ShareFetchResponse) *shareFetchOut {
	return &shareFetchOut{resp: resp, at: map[share.TopicPartition][2]int{}, leaders: map[int32]bool{}}
}

func (o *shareFetchOut) partition(tp share.TopicPartition) *kmsg.ShareFetchResponseTopicPartition {
	if i, ok := o.at[tp]; ok {
		return &o.resp.Topics[i[0]].Partitions[i[1]]
	}
	ti := -1
	for i := range o.resp.Topics {
		if o.resp.Topics[i].TopicID == tp.TopicID {
			ti = i
			break
		}
	}
	if ti < 0 {
		t := kmsg.NewShareFetchResponseTopic()
		t.TopicID = tp.TopicID
		o.resp.Topics = append(o.resp.Topics, t)
		ti = len(o.resp.Topics) - 1
	}
	p := kmsg.NewShareFetchResponseTopicPartition()
	p.Partition = tp.Partition
	// Kafka's schema default: 0/0 would name broker 0 as the leader.
	p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
	o.resp.Topics[ti].Partitions = append(o.resp.Topics[ti].Partitions, p)
	o.at[tp] = [2]int{ti, len(o.resp.Topics[ti].Partitions) - 1}
	return &o.resp.Topics[ti].Partitions[len(o.resp.Topics[ti].Partitions)-1]
}

// endpoints lists the brokers named as CurrentLeader (KIP-951).
func (o *shareFetchOut) endpoints(n *Node, listener string) {
	if len(o.leaders) == 0 {
		return
	}
	for _, b := range n.cluster.BrokersOn(listener) {
		if o.leaders[b.ID] {
			ep := kmsg.NewShareFetchResponseNodeEndpoint()
			ep.NodeID, ep.Host, ep.Port = b.ID, b.Host, b.Port
			if b.Rack != "" {
				ep.Rack = kmsg.StringPtr(b.Rack)
			}
			o.resp.NodeEndpoints = append(o.resp.NodeEndpoints, ep)
		}
	}
}

// shareAcknowledge applies one partition's acknowledgements, as ShareFetch
// and ShareAcknowledge both do, and returns the partition's error code.
func (n *Node) shareAcknowledge(who requester, groupID, memberID string, tp share.TopicPartition, batches []share.AckBatch, renew bool) int16 {
	name, ok := n.catalog.TopicName(tp.TopicID)
	if !ok {
		return kerr.UnknownTopicID.Code
	}
	if !who.mayTopic(kmsg.ACLOperationRead, name) {
		return kerr.TopicAuthorizationFailed.Code
	}
	p, e := n.leaderPartition(name, tp.Partition)
	if e != nil {
		return e.Code
	}
	_, parts := n.coords.Shares.Get()
	if e := parts.Acknowledge(share.Key{Group: groupID, TopicPartition: tp}, memberID, coord.ShareLog(p), batches, renew); e != nil {
		return e.Code
	}
	return 0
}
