package node

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/partition"
	"github.com/spool-log/spool/wire"
)

// OffsetForLeaderEpoch: v2-4
//
// Behavior:
// * Authorization: DESCRIBE on the topic (a consumer's check; Spool's
//   replicas do not use this API), else TOPIC_AUTHORIZATION_FAILED.
// * KIP-320: a consumer that saw a new leader (or a FENCED_LEADER_EPOCH)
//   asks, for the epoch of the last batch it consumed, where that epoch
//   ends on the leader; an end below its position means the log it read
//   was truncated under it, and it resets.
// * Answered by the partition's leader only (NOT_LEADER_OR_FOLLOWER
//   elsewhere), from its replica's leader-epoch cache, as Kafka's
//   LeaderEpochFileCache.endOffsetFor: the requested epoch's end offset is
//   the start offset of the next higher epoch, or the log end offset for
//   the leader's current epoch; an epoch between two cached ones is
//   answered with the older one (the largest epoch at or below it) and the
//   newer one's start; an epoch older than the whole cache with the first
//   cached start; an epoch newer than the current one, or -1, with
//   UNDEFINED (-1) epoch and offset. The leader's current epoch counts as
//   cached from the log end even before a batch is written in it, as a
//   Kafka leader assigns its epoch on election.
// * Tiered (KIP-405): below the local log start the cache is the
//   uploaded segments' epochs, recorded with each upload (node/tier's
//   View.LeaderEpochs), so an epoch whose records are only in the store
//   is answered as the local cache would have before retention cut it.
// * CurrentLeaderEpoch (v2+) is checked as in Fetch and ListOffsets:
//   older than the leader's FENCED_LEADER_EPOCH, newer
//   UNKNOWN_LEADER_EPOCH, -1 not checked.
// * ReplicaID (v3+) is accepted from anyone: the answer is the same, and
//   Spool's replicas do not use this API to replicate.
//
// Version notes:
// * v0-1 are not offered (removed in Kafka 4.0, KIP-896).
// * v1: LeaderEpoch in response
// * v2: CurrentLeaderEpoch in request, ThrottleMillis in response
// * v3: ReplicaID in request
// * v4: flexible versions

func (n *Node) handleOffsetForLeaderEpoch(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	who := n.access.Requester(ctx, wreq)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		allowed := who.MayTopic(kmsg.ACLOperationDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			var code *kerr.Error
			var p *localPartition
			switch {
			case !allowed:
				code = kerr.TopicAuthorizationFailed
			case membership.ValidateTopicName(rt.Topic) != nil:
				code = kerr.UnknownTopicOrPartition
			default:
				if p, code = n.leaderPartition(rt.Topic, rp.Partition); code == nil {
					current := p.Replica.LeaderEpoch()
					if code = checkLeaderEpoch(rp.CurrentLeaderEpoch, current); code == nil {
						epochs := n.remote(p).LeaderEpochs(p.Replica.LeaderEpochs())
						sp.LeaderEpoch, sp.EndOffset = endOffsetForEpoch(epochs, current, p.Replica.LogEndOffset(), rp.LeaderEpoch)
					}
				}
			}
			if code != nil {
				sp.ErrorCode = code.Code
				sp.LeaderEpoch, sp.EndOffset = -1, -1
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// checkLeaderEpoch is KIP-320's fencing of a request's CurrentLeaderEpoch
// against the leader's: older is FENCED_LEADER_EPOCH (the client's
// metadata is stale), newer UNKNOWN_LEADER_EPOCH (this leader's view is),
// -1 is not checked (clients before KIP-320, or without an epoch yet).
func checkLeaderEpoch(requested, leader int32) *kerr.Error {
	switch {
	case requested < 0:
		return nil
	case requested < leader:
		return kerr.FencedLeaderEpoch
	case requested > leader:
		return kerr.UnknownLeaderEpoch
	}
	return nil
}

// endOffsetForEpoch is Kafka's LeaderEpochFileCache.endOffsetFor over
// cache (oldest first) with the leader's current epoch counted as starting
// at the log end when the cache does not have it yet: the epoch found and
// where it ends, or -1, -1 when requested is undefined or newer than
// anything known.
func endOffsetForEpoch(cache []partition.EpochEntry, current int32, logEnd int64, requested int32) (int32, int64) {
	if current >= 0 && (len(cache) == 0 || cache[len(cache)-1].Epoch < current) {
		// The election's entry, which takes over entries at or past
		// its start, as Kafka's assign does.
		for len(cache) > 0 && cache[len(cache)-1].StartOffset >= logEnd {
			cache = cache[:len(cache)-1]
		}
		cache = append(cache, partition.EpochEntry{Epoch: current, StartOffset: logEnd})
	}
	if requested < 0 || len(cache) == 0 {
		return -1, -1
	}
	if latest := cache[len(cache)-1].Epoch; requested == latest {
		return latest, logEnd
	}
	higher := sort.Search(len(cache), func(i int) bool { return cache[i].Epoch > requested })
	switch {
	case higher == len(cache):
		return -1, -1 // newer than any epoch known
	case higher == 0:
		return requested, cache[0].StartOffset // older than the whole cache
	}
	return cache[higher-1].Epoch, cache[higher].StartOffset
}
