package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// DescribeProducers: v0
//
// Behavior:
// * Authorization: READ on the topic, else TOPIC_AUTHORIZATION_FAILED.
// * Lists, per partition, the idempotent producers whose state the leader
//   keeps for duplicate detection (node/hosted): id, epoch and the last
//   sequence number written, by producer id. That state is rebuilt from the
//   log's tail at start and forgotten after producer.id.expiration.ms idle.
// * LastTimestamp is when the leader last appended the producer's batch (at
//   a restart, when the state was rebuilt), not the batch's own timestamp,
//   which the state does not keep.
// * CurrentTxnStartOffset is the first offset of the producer's open
//   transaction in the committed log (hosted.TxnIndex), else -1, which is
//   what finds a hanging transaction. CoordinatorEpoch is -1 (not kept).
// * Served by the partition's leader; elsewhere NOT_LEADER_OR_FOLLOWER,
//   and clients send each partition to its leader. Unknown topics or
//   partitions get UNKNOWN_TOPIC_OR_PARTITION.

func (n *Node) handleDescribeProducers(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	who := n.access.Requester(ctx, wreq)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		allowed := who.MayTopic(kmsg.ACLOperationRead, rt.Topic)
		for _, index := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = index
			if !allowed {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p, e := n.leaderPartition(rt.Topic, index)
			if e != nil {
				sp.ErrorCode = e.Code
			} else {
				sp.ActiveProducers = p.DescribeProducers()
				if err := p.Txns.Refresh(p.Replica, p.Dir); err == nil {
					for i := range sp.ActiveProducers {
						if first, ok := p.Txns.OpenSince(sp.ActiveProducers[i].ProducerID); ok {
							sp.ActiveProducers[i].CurrentTxnStartOffset = first
						}
					}
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
