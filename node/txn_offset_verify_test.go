package node

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnOffsetCommit is refused unless the transaction coordinator has the
// producer's ongoing transaction holding the group (AddOffsetsToTxn), as
// a transactional produce is.
func TestTxnOffsetCommitVerified(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	createTopic(t, newAdmin(t, n), "txn-ov", 1, nil)
	ctx := testCtx(t)
	cl := newClient(t, n)
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr("tx-ov"), 60000
	ir, err := ip.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("init producer id: %v %d", err, ir.ErrorCode)
	}
	commit := func(epoch int16) int16 {
		t.Helper()
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version = 3
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = "tx-ov", "g-ov", ir.ProducerID, epoch, -1
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "txn-ov", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5, LeaderEpoch: -1}}}}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(ir.ProducerEpoch); code != kerr.InvalidTxnState.Code {
		t.Fatalf("commit without AddOffsetsToTxn: code %d, want INVALID_TXN_STATE", code)
	}
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "tx-ov", ir.ProducerID, ir.ProducerEpoch, "g-ov"
	if ar, err := ao.RequestWith(ctx, cl); err != nil || ar.ErrorCode != 0 {
		t.Fatalf("add offsets: %v %+v", err, ar)
	}
	if code := commit(ir.ProducerEpoch - 1); code != kerr.InvalidProducerEpoch.Code && code != kerr.ProducerFenced.Code {
		t.Fatalf("commit by an older epoch: code %d, want INVALID_PRODUCER_EPOCH", code)
	}
	if code := commit(ir.ProducerEpoch); code != 0 {
		t.Fatalf("commit in the transaction: code %d", code)
	}
}
