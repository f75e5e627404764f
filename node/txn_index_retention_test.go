package node

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/node/hosted"
)

// When the log start moves past the transaction index's scan while it
// scans (retention, DeleteRecords), the scan goes on from the new start:
// the open transaction after it still holds the last stable offset.
func TestTxnIndexScanAcrossLogStartMove(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	createTopic(t, adm, "txn-ret", 1, nil)
	ctx := testCtx(t)
	plain := newClient(t, n)
	for i := range 10 {
		if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "txn-ret", Key: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl := newClient(t, n, kgo.TransactionalID("tx-ret"))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "txn-ret", Key: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.EndTransaction(context.Background(), kgo.TryAbort) })
	// The first read of the scan finds the start moved to 5.
	moved := false
	hosted.SetScanHook(func() {
		if moved {
			return
		}
		moved = true
		var o kadm.Offsets
		o.Add(kadm.Offset{Topic: "txn-ret", Partition: 0, At: 5})
		if r, err := adm.DeleteRecords(ctx, o); err != nil || r.Error() != nil {
			t.Errorf("delete records: %v %v", err, r.Error())
		}
	})
	t.Cleanup(func() { hosted.SetScanHook(nil) })
	lso, err := n.parts.Get("txn-ret", 0).Stable()
	if err != nil {
		t.Fatal(err)
	}
	if !moved || lso != 10 {
		t.Fatalf("last stable offset %d (start moved: %v), want 10: the open transaction's first offset", lso, moved)
	}
}
