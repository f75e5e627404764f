package node

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/txn"
	"github.com/spool-log/spool/wire"
)

// InitProducerID: v0-5
//
// Behavior:
// * Authorization (Kafka 3.x, KIP-679): an idempotent producer needs
//   IDEMPOTENT_WRITE on the cluster or WRITE on some topic, else
//   CLUSTER_AUTHORIZATION_FAILED; a transactional id needs WRITE on it,
//   else TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
// * Idempotent producers (null transactional id) get a fresh producer id
//   with epoch 0: the node id in the high 32 bits, a counter persisted in
//   blocks in the low 32, so an id is never handed out twice, across
//   restarts or nodes. A request carrying an existing id/epoch (v3+, KIP-360)
//   also gets a fresh id, which resets its sequence numbers just as an
//   epoch bump would.
// * A transactional id goes to its transaction coordinator (node/txn): the
//   id keeps its producer id and gets the next epoch, fencing every older
//   producer of it; an ongoing transaction is aborted first (the client is
//   told CONCURRENT_TRANSACTIONS and retries). The timeout must be in
//   (0, 15 min] (transaction.max.timeout.ms), else
//   INVALID_TRANSACTION_TIMEOUT. An empty transactional id is treated as
//   none, as Kafka does.
//
// Version notes:
// * v2: flexible versions from v2 onward
// * v3: ProducerID and ProducerEpoch in the request (KIP-360): a
//   transactional producer naming an id/epoch that is not the current one
//   is PRODUCER_FENCED
// * v4: PRODUCER_FENCED may be returned (older versions get
//   INVALID_PRODUCER_EPOCH instead, KIP-588)
// * v5: (Kafka 3.8) no change for transactions v1, which is all Spool
//   offers: ApiVersions advertises no transaction.version feature, so
//   clients do not use transactions v2 (KIP-890 part 2).

func (n *Node) handleInitProducerID(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID = -1
	resp.ProducerEpoch = -1
	who := n.requesterOf(ctx, wreq)
	transactional := req.TransactionalID != nil && *req.TransactionalID != ""
	if transactional && !who.mayTransactionalID(kmsg.ACLOperationWrite, *req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp
	}
	if !transactional && !who.mayCluster(kmsg.ACLOperationIdempotentWrite) &&
		!who.mayAny(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp
	}
	if transactional {
		coord, code := n.coords.Txns.For(*req.TransactionalID)
		if code != 0 {
			resp.ErrorCode = code
			return resp
		}
		pid, epoch := int64(-1), int16(-1)
		if req.Version >= 3 {
			pid, epoch = req.ProducerID, req.ProducerEpoch
		}
		resp.ProducerID, resp.ProducerEpoch, code = coord.InitProducerID(*req.TransactionalID, time.Duration(req.TransactionTimeoutMillis)*time.Millisecond, pid, epoch)
		resp.ErrorCode = txn.FencedCode(code, req.Version >= 4)
		return resp
	}
	id, err := n.coords.ProducerIDs.Allocate()
	if err != nil {
		n.log.WithError(err).Error("allocate producer id")
		resp.ErrorCode = kerr.KafkaStorageError.Code
		return resp
	}
	resp.ProducerID = id
	resp.ProducerEpoch = 0
	return resp
}
