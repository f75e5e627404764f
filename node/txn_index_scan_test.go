package node

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/node/hosted"
)

// While one request scans a partition's transactions (which can take
// seconds on a large log), read_committed fetches of that partition are
// answered from what the scan has published, not held behind it: here the
// scan is stopped at its first read, and a read_committed consumer still
// reads the committed transaction that the index knew before.
func TestReadCommittedFetchAnswersDuringScan(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	createTopic(t, adm, "txn-scan", 1, nil)
	ctx := testCtx(t)
	cl := newClient(t, n, kgo.TransactionalID("tx-scan"))
	commitOne := func(key string) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "txn-scan", Key: []byte(key)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
	}
	commitOne("first")
	p := n.parts.Get("txn-scan", 0)
	lso, err := p.Stable() // the index now covers the first transaction
	if err != nil {
		t.Fatal(err)
	}
	commitOne("second")

	// The next scan (of the second transaction) stops at its first read
	// until released.
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hosted.SetScanHook(func() {
		once.Do(func() {
			close(entered)
			<-release
		})
	})
	t.Cleanup(func() { hosted.SetScanHook(nil) })
	scanDone := make(chan error, 1)
	go func() {
		_, err := p.Stable()
		scanDone <- err
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the scan never started")
	}

	rc := newClient(t, n, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"txn-scan": {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var got []string
	for len(got) == 0 && fctx.Err() == nil {
		fs := rc.PollFetches(fctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Key)) })
	}
	if st := p.Txns.StableOffset(p.Replica.HighWatermark(), p.Replica.LogStartOffset()); st != lso {
		t.Errorf("last stable offset %d during the scan, want %d (what the index knew before it)", st, lso)
	}
	close(release)
	if err := <-scanDone; err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[first]" {
		t.Fatalf("read_committed fetch during the scan read %v, want [first]", got)
	}
	if lso2, err := p.Stable(); err != nil || lso2 <= lso {
		t.Fatalf("after the scan: last stable offset %d (%v), want above %d", lso2, err, lso)
	}
}
