package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
// * Transactions are not supported: a transactional id gets
//   TRANSACTIONAL_ID_AUTHORIZATION_FAILED, a non-retriable error, so the
//   client fails fast instead of retrying forever.
//
// Version notes:
// * v2: flexible versions from v2 onward
// * v3: ProducerID and ProducerEpoch in the request (KIP-360)
// * v4: PRODUCER_FENCED may be returned (never, here)
// * v5: transactions v2 (KIP-890 part 2) for transactional ids: refused as
//   at every version; for idempotent producers v5 is v4.

func (n *Node) handleInitProducerID(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID = -1
	resp.ProducerEpoch = -1
	who := n.requesterOf(ctx, wreq)
	if req.TransactionalID != nil && !who.mayTransactionalID(kmsg.ACLOperationWrite, *req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp
	}
	if req.TransactionalID == nil && !who.mayCluster(kmsg.ACLOperationIdempotentWrite) &&
		!who.mayAny(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp
	}
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp
	}
	id, err := n.pids.allocate()
	if err != nil {
		n.log.WithError(err).Error("allocate producer id")
		resp.ErrorCode = kerr.KafkaStorageError.Code
		return resp
	}
	resp.ProducerID = id
	resp.ProducerEpoch = 0
	return resp
}
