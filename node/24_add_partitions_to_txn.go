package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/txn"
	"github.com/spool-log/spool/wire"
)

// AddPartitionsToTxn: v0-4
//
// Behavior:
// * Adds partitions to the producer's transaction at its coordinator
//   (node/txn), which stores the new partition set before answering; the
//   transaction becomes Ongoing and its timeout starts with the first add.
// * The producer id must be the transactional id's
//   (INVALID_PRODUCER_ID_MAPPING) at its current epoch (PRODUCER_FENCED;
//   INVALID_PRODUCER_EPOCH before v2); a transaction still being ended
//   is CONCURRENT_TRANSACTIONS, which clients retry. A partition that does
//   not exist is UNKNOWN_TOPIC_OR_PARTITION and the request's others
//   OPERATION_NOT_ATTEMPTED, nothing added.
//
// Version notes:
// * v2: PRODUCER_FENCED (KIP-588)
// * v3: flexible versions
// * v4: several transactions per request, each possibly VerifyOnly
//   (KIP-890 part 1, meant for brokers); answered one by one.
// * v5 (TRANSACTION_ABORTABLE, KIP-890 part 2) is not offered.

func (n *Node) handleAddPartitionsToTxn(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	who := n.requesterOf(ctx, wreq)
	if req.Version >= 4 && !who.mayCluster(kmsg.ACLOperationClusterAction) {
		// v4+ is Kafka's broker-to-broker batch (KIP-890): CLUSTER_ACTION.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp
	}
	if req.Version < 4 {
		topics := make([]kmsg.AddPartitionsToTxnRequestTransactionTopic, 0, len(req.Topics))
		for _, t := range req.Topics {
			topics = append(topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
		codes := n.addPartitionsToTxn(who, req.TransactionalID, req.ProducerID, req.ProducerEpoch, false, topics, req.Version >= 2)
		for _, t := range req.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[txn.TopicPartition{Topic: t.Topic, Partition: p}]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	for _, tr := range req.Transactions {
		codes := n.addPartitionsToTxn(who, tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly, tr.Topics, true)
		rtr := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtr.TransactionalID = tr.TransactionalID
		for _, t := range tr.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[txn.TopicPartition{Topic: t.Topic, Partition: p}]
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtr.Topics = append(rtr.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, rtr)
	}
	return resp
}

// addPartitionsToTxn returns each partition's code.
// addPartitionsToTxn answers per partition. As Kafka: WRITE on the
// transactional id, else every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
// WRITE on each topic, else that topic's partitions
// TOPIC_AUTHORIZATION_FAILED and the others OPERATION_NOT_ATTEMPTED.
func (n *Node) addPartitionsToTxn(who requester, txnID string, pid int64, epoch int16, verifyOnly bool, topics []kmsg.AddPartitionsToTxnRequestTransactionTopic, knowsFenced bool) map[txn.TopicPartition]int16 {
	var tps []txn.TopicPartition
	for _, t := range topics {
		for _, p := range t.Partitions {
			tps = append(tps, txn.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	codes := make(map[txn.TopicPartition]int16, len(tps))
	if !who.mayTransactionalID(kmsg.ACLOperationWrite, txnID) {
		for _, tp := range tps {
			codes[tp] = kerr.TransactionalIDAuthorizationFailed.Code
		}
		return codes
	}
	denied := map[string]bool{}
	for _, t := range topics {
		if !who.mayTopic(kmsg.ACLOperationWrite, t.Topic) {
			denied[t.Topic] = true
		}
	}
	if len(denied) > 0 {
		for _, tp := range tps {
			codes[tp] = kerr.OperationNotAttempted.Code
			if denied[tp.Topic] {
				codes[tp] = kerr.TopicAuthorizationFailed.Code
			}
		}
		return codes
	}
	coord, code := n.coords.Txns.For(txnID)
	var per map[txn.TopicPartition]int16
	if code == 0 {
		code, per = coord.AddPartitions(txnID, pid, epoch, tps, verifyOnly)
	}
	for _, tp := range tps {
		codes[tp] = txn.FencedCode(code, knowsFenced)
		if c, ok := per[tp]; ok && code == 0 {
			codes[tp] = c
		}
	}
	return codes
}
