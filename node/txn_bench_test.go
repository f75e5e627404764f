package node

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/partition"
)

// TestTxnThroughputRatio measures transactional produce (transactions of
// 100 and 1,000 records) against idempotent produce in the same run, on
// one in-process node: SPOOL_TXN_BENCH=1 go test ./node -run
// TestTxnThroughputRatio -v. The figures are in the README.
func TestTxnThroughputRatio(t *testing.T) {
	if os.Getenv("SPOOL_TXN_BENCH") == "" {
		t.Skip("set SPOOL_TXN_BENCH=1 to measure")
	}
	n := startNode(t, testConfig(t, t.TempDir()))
	createTopic(t, newAdmin(t, n), "bench-txn", 3, nil)
	const total = 50_000
	value := make([]byte, 100)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := func(name string, perTxn int, opts ...kgo.Opt) float64 {
		cl := newClient(t, n, append([]kgo.Opt{kgo.DefaultProduceTopic("bench-txn"), kgo.ProducerLinger(time.Millisecond)}, opts...)...)
		start := time.Now()
		for done := 0; done < total; {
			batch := min(perTxn, total-done)
			if perTxn > 0 {
				if err := cl.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
			} else {
				batch = total
			}
			for range batch {
				cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						t.Errorf("%s: %v", name, err)
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if perTxn > 0 {
				if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
					t.Fatal(err)
				}
			}
			done += batch
		}
		rate := float64(total) / time.Since(start).Seconds()
		t.Logf("%s: %d records in %v: %.0f records/s", name, total, time.Since(start).Round(time.Millisecond), rate)
		return rate
	}
	idem := run("idempotent", 0)
	t100 := run("transactions of 100", 100, kgo.TransactionalID("bench-100"))
	t1000 := run("transactions of 1000", 1000, kgo.TransactionalID("bench-1000"))
	t.Logf("ratio to idempotent: transactions of 100 %.2f, of 1000 %.2f", t100/idem, t1000/idem)
}

// TestTxnIndexRebuildCost measures the first read_committed read after a
// restart, which scans every committed batch header of the partition
// (hosted.TxnIndex): SPOOL_TXN_BENCH=1 go test ./node -run
// TestTxnIndexRebuildCost -v.
func TestTxnIndexRebuildCost(t *testing.T) {
	if os.Getenv("SPOOL_TXN_BENCH") == "" {
		t.Skip("set SPOOL_TXN_BENCH=1 to measure")
	}
	cfg := testConfig(t, t.TempDir())
	cfg.Topic.Flush = partition.FlushOS // the default policy: no fsync per batch
	n := startNode(t, cfg)
	createTopic(t, newAdmin(t, n), "bench-scan", 1, nil)
	p := n.parts.Get("bench-scan", 0)
	const batches = 100_000
	b := recordbatch.Simple(time.Now().UnixMilli(), make([]byte, 100))
	for range batches {
		if _, err := p.Replica.Produce(context.Background(), b, replica.AcksAll); err != nil {
			t.Fatal(err)
		}
	}
	p.Txns.Forget() // as after a restart
	start := time.Now()
	lso, err := p.Stable()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("scanned %d batches (%d bytes) to last stable offset %d in %v (page cache warm)", batches, p.Replica.Size(), lso, time.Since(start).Round(time.Millisecond))
}
