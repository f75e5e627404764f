package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// DescribeTransactions: v0
//
// Behavior:
// * Each transactional id is described by its coordinator: state, producer
//   id and epoch, timeout, start time and partitions. An id this node does
//   not coordinate is NOT_COORDINATOR (the client asks FindCoordinator);
//   an unknown one TRANSACTIONAL_ID_NOT_FOUND.

func (n *Node) handleDescribeTransactions(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	who := n.requesterOf(ctx, wreq)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		if !who.mayTransactionalID(kmsg.ACLOperationDescribe, id) {
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		coord, code := n.coords.Txns.For(id)
		if code == 0 {
			t, c := coord.Describe(id)
			code = c
			if c == 0 {
				st.State, st.TimeoutMillis = t.State.String(), int32(t.Timeout.Milliseconds())
				st.ProducerID, st.ProducerEpoch = t.ProducerID, t.Epoch
				if !t.Start.IsZero() {
					st.StartTimestamp = t.Start.UnixMilli()
				}
				for _, tp := range t.Partitions {
					if !who.mayTopic(kmsg.ACLOperationDescribe, tp.Topic) {
						continue // as Kafka: topics the requester may not see are left out
					}
					if k := len(st.Topics); k == 0 || st.Topics[k-1].Topic != tp.Topic {
						rt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
						rt.Topic = tp.Topic
						st.Topics = append(st.Topics, rt)
					}
					last := &st.Topics[len(st.Topics)-1]
					last.Partitions = append(last.Partitions, tp.Partition)
				}
			}
		}
		st.ErrorCode = code
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}
