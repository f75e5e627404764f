package coord

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/txn"
	"github.com/spool-log/spool/partition"
)

// VerifyRequest asks a transactional id's coordinator whether the
// producer's ongoing transaction holds a partition (the body of
// admin.TxnPath+"verify").
type VerifyRequest struct {
	TxnID      string `json:"transactional_id"`
	ProducerID int64  `json:"producer_id"`
	Epoch      int16  `json:"epoch"`
	Topic      string `json:"topic"`
	Partition  int32  `json:"partition"`
}

type verifyResponse struct {
	ErrorCode int16 `json:"error_code"`
}

// verifyTimeout bounds a verification forwarded to the coordinator's node.
const verifyTimeout = 10 * time.Second

func (t *Txns) verifyLocal(req VerifyRequest) int16 {
	c, code := t.For(req.TxnID)
	if code != 0 {
		return code
	}
	return c.Verify(req.TxnID, req.ProducerID, req.Epoch, txn.TopicPartition{Topic: req.Topic, Partition: req.Partition})
}

// VerifyBatch checks, before the first transactional batch of a
// transaction is appended to p, that the producer's ongoing transaction
// holds p, asking the transaction's coordinator. It returns the producer's
// marker count as of the check (the append refuses the batch if a marker
// came since) or the code to refuse it with.
func (t *Txns) VerifyBatch(ctx context.Context, p *hosted.Partition, txnID string, h partition.BatchHeader, topic string) (uint64, int16) {
	open, markers, e := p.TxnView(h.ProducerID, h.ProducerEpoch)
	if e != nil {
		return 0, e.Code
	}
	if open {
		return markers, 0
	}
	req := VerifyRequest{TxnID: txnID, ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, Topic: topic, Partition: p.Index}
	code, err := t.Verify(ctx, req)
	if err != nil {
		t.log.WithError(err).WithField("transactional_id", txnID).Debug("transactional batch not verified")
		return 0, kerr.NotEnoughReplicas.Code // retriable: the coordinator could not be asked
	}
	switch code {
	case 0:
		return markers, 0
	case kerr.ProducerFenced.Code, kerr.InvalidProducerEpoch.Code:
		return 0, kerr.InvalidProducerEpoch.Code
	case kerr.InvalidProducerIDMapping.Code:
		return 0, kerr.InvalidProducerIDMapping.Code
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.ConcurrentTransactions.Code:
		return 0, kerr.NotEnoughReplicas.Code
	default:
		return 0, kerr.InvalidTxnState.Code
	}
}

// Verify asks req's transactional id's coordinator, here or on its node,
// and returns its answer's code; an error if it could not be asked.
func (t *Txns) Verify(ctx context.Context, req VerifyRequest) (int16, error) {
	c, err := t.Get()
	if err != nil {
		return 0, err
	}
	spec, ok := t.b.Topic(txn.TopicName)
	p := c.Partition(req.TxnID)
	if !ok || p >= spec.Partitions {
		return 0, errors.New("no transaction state topic")
	}
	leader := t.b.LeaderOf(txn.TopicName, p)
	switch {
	case leader < 0:
		return 0, errors.New("transaction coordinator unknown")
	case leader == t.b.NodeID():
		return t.verifyLocal(req), nil
	}
	ctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	var out verifyResponse
	if err := t.b.PostToBroker(ctx, leader, admin.TxnPath+"verify", req, 4096, &out); err != nil {
		return 0, err
	}
	return out.ErrorCode, nil
}
