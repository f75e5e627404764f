package node

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/node/hosted"
)

// A txn-index checkpoint is refused when the log it was taken from is not
// the log there now (a tail lost in a crash and written again with other
// batches at the same offsets): its open and aborted transactions are not
// trusted, the index is built from the log.
func TestTxnIndexCheckpointOfOtherLog(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	n := startNode(t, cfg)
	adm := newAdmin(t, n)
	createTopic(t, adm, "txn-ck-a", 1, nil)
	createTopic(t, adm, "txn-ck-b", 1, nil)
	ctx := testCtx(t)
	cl := newClient(t, n, kgo.TransactionalID("tx-ck"))
	if err := txnProduce(t, ctx, cl, "txn-ck-a", "ab", 3, false); err != nil {
		t.Fatal(err)
	}
	readKeys(t, n, "txn-ck-a", 0, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	end := n.parts.Get("txn-ck-a", 0).Replica.HighWatermark()
	// Other batches at the same offsets in another partition.
	plain := newClient(t, n)
	for i := range end {
		if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "txn-ck-b", Key: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	stopNode(t, n)
	b, err := os.ReadFile(filepath.Join(cfg.DataDir, "txn-ck-a-0", hosted.TxnIndexFile))
	if err != nil {
		t.Fatalf("no checkpoint: %v", err)
	}
	var c hosted.TxnIndexCheckpoint
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if c.Scanned != end {
		t.Fatalf("checkpoint scanned to %d, want %d", c.Scanned, end)
	}
	// A transaction the checkpoint thinks open would pin B's last stable
	// offset at 0 if it were trusted.
	c.Open = map[string]int64{"4242": 0}
	b, _ = json.Marshal(c)
	if err := os.WriteFile(filepath.Join(cfg.DataDir, "txn-ck-b-0", hosted.TxnIndexFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	n = startNode(t, cfg)
	got := readKeys(t, n, "txn-ck-b", int(end), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if len(got) != int(end) {
		t.Fatalf("read_committed saw %d of %d records of txn-ck-b", len(got), end)
	}
	p := n.parts.Get("txn-ck-b", 0)
	st := p.Txns.Snapshot()
	if len(st.Open) != 0 || len(st.Aborted) != 0 {
		t.Fatalf("index of txn-ck-b trusts the other log's checkpoint: open %v aborted %v", st.Open, st.Aborted)
	}
}
