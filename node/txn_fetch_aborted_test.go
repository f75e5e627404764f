package node

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// A read_committed fetch lists the aborted transactions that may hold the
// records it returns, up to the end of those records, not every one up to
// the last stable offset.
func TestTxnFetchAbortedUpToRecordsSent(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	createTopic(t, newAdmin(t, n), "txn-fab", 1, nil)
	ctx := testCtx(t)
	cl := newClient(t, n, kgo.TransactionalID("tx-fab"), kgo.DefaultProduceTopic("txn-fab"))
	for _, prefix := range []string{"a1", "a2", "a3"} {
		if err := txnProduce(t, ctx, cl, "txn-fab", prefix, 2, false); err != nil {
			t.Fatal(err)
		}
	}
	fetch := func(maxBytes int32) ([]wire.FetchAborted, int64) {
		t.Helper()
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = 0, maxBytes
		fp := wire.NewFetchPartition(0)
		remaining := int64(maxBytes)
		if code := n.fetchPartition("txn-fab", rp, &fp, 0, &remaining, true); code != nil {
			t.Fatal(code)
		}
		defer fp.Records.Release()
		return fp.AbortedTransactions, fp.LastStableOffset
	}
	// One batch (the first record of the first transaction): only that
	// transaction may hold it.
	if got, lso := fetch(1); len(got) != 1 || got[0].FirstOffset != 0 {
		t.Fatalf("fetch of one batch (LSO %d) lists aborted %+v, want the first transaction only", lso, got)
	}
	if got, _ := fetch(1 << 20); len(got) != 3 {
		t.Fatalf("fetch of everything lists aborted %+v, want 3", got)
	}
}
