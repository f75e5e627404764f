package node

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/node/hosted"
)

// The txn-index checkpoint (an fsync) is written off the fetch path: a
// read_committed read that learns an abort leaves it to the flush.
func TestTxnIndexCheckpointOffFetchPath(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	n := startNode(t, cfg)
	createTopic(t, newAdmin(t, n), "txn-fl", 1, nil)
	ctx := testCtx(t)
	cl := newClient(t, n, kgo.TransactionalID("tx-fl"))
	if err := txnProduce(t, ctx, cl, "txn-fl", "ab", 3, false); err != nil {
		t.Fatal(err)
	}
	p := n.parts.Get("txn-fl", 0)
	if _, err := p.Stable(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(cfg.DataDir, "txn-fl-0", hosted.TxnIndexFile)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("checkpoint written on the read path: %v", err)
	}
	p.Txns.FlushCheckpoint(p.Dir)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no checkpoint after the flush: %v", err)
	}
}
