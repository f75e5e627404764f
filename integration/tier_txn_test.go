package integration

// read_committed below the local log start (issue 30): the aborted
// transactions a consumer must be told of come from each uploaded
// segment's txnindex, which the leader writes only once no transaction
// with a record in the segment is open.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node/tier/tiertest"
)

// TestTierReadCommittedFromStore: a tiered R=3 topic written by two
// transactional producers — one committing two transactions in three and
// aborting the third, the other holding one transaction open across
// every segment and then aborting it — with a local retention of one
// byte. While the long transaction is open no segment is uploaded; once it
// ended, the segments go to the store and leave the local disks, and a
// read_committed consumer from offset 0 (franz-go, and kcat, whose
// librdkafka filters on its own) gets exactly the committed records in
// order, although the aborts are recorded below the local log start.
func TestTierReadCommittedFromStore(t *testing.T) {
	needKcat(t)
	sw := tiertest.Start(t)
	store := sw.Store(t, "it/")
	nodes := startCluster(t, 3, withTier(sw))
	seeds := kafkaAddrs(nodes)
	topic := uniqueTopic("tier-txn")
	createTieredTopic(t, nodes, topic, 1)
	ctx := ctxTimeout(t, 3*time.Minute)
	producer := func(id string) *kgo.Client {
		return franzClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
			kgo.TransactionalID(topic+"-"+id), kgo.TransactionTimeout(2*time.Minute), kgo.ProducerBatchCompression(kgo.NoCompression()))
	}
	steady, long := producer("steady"), producer("long")
	pad := strings.Repeat("x", 1000)
	var committed []string
	others := 0 // aborted records
	produce := func(cl *kgo.Client, value string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(value + pad)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := long.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(long, "long-0|")
	others++
	const txns = 39 // 50 records of 1 KiB each: about 8 segments of 256 KiB
	for i := range txns {
		commit := i%3 != 2
		if err := steady.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for j := range 50 {
			v := fmt.Sprintf("aborted-%d-%d|", i, j)
			if commit {
				v = fmt.Sprintf("committed-%d-%d|", i, j)
			}
			produce(steady, v)
			if commit {
				committed = append(committed, v)
			} else {
				others++
			}
		}
		if err := steady.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		if i%10 == 5 {
			produce(long, fmt.Sprintf("long-%d|", i))
			others++
		}
	}
	// The long transaction holds the last stable offset at its first
	// record: segments are closed on the leader, none may be uploaded.
	retry.Run(t, 30*time.Second, func() error {
		for _, n := range nodes {
			if bases, _ := localSegments(t, n, topic, 0); len(bases) < 4 {
				return fmt.Errorf("node %d: segments from %v", n.ID, bases)
			}
		}
		return nil
	})
	time.Sleep(time.Second) // five upload intervals
	if _, segs, err := storeManifest(t, store, topic, 0); err == nil && len(segs) > 0 {
		t.Fatalf("with a transaction open from offset 0, %d segments were uploaded (the first [%d,%d))", len(segs), segs[0].Base, segs[0].Next)
	}
	if err := long.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	// One more committed transaction, so the aborted records all precede
	// the last committed one.
	if err := steady.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for j := range 50 {
		v := fmt.Sprintf("committed-tail-%d|", j)
		produce(steady, v)
		committed = append(committed, v)
	}
	if err := steady.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	// Uploaded, with the aborted records and the long transaction's
	// marker's earlier records below the leader's local start.
	var localStart int64
	retry.Run(t, 90*time.Second, func() error {
		_, segs, err := storeManifest(t, store, topic, 0)
		if err != nil {
			return err
		}
		if len(segs) < 4 {
			return fmt.Errorf("%d remote segments", len(segs))
		}
		checkRanges(t, segs)
		if localStart, err = leaderLocalStart(t, seeds, topic, 0); err == nil && localStart < segs[len(segs)-1].Next {
			err = fmt.Errorf("the leader's local log starts at %d, below the remote end %d", localStart, segs[len(segs)-1].Next)
		}
		return err
	})

	// The aborted records are there to be read (read_uncommitted), below
	// the local start.
	all := franzConsume(t, seeds[0], topic, 0, kgo.NewOffset().AtStart(), len(committed)+others)
	below := 0
	for _, r := range all {
		if !strings.HasPrefix(string(r.Value), "committed-") && r.Offset < localStart {
			below++
		}
	}
	if below < 100 {
		t.Fatalf("only %d aborted records below the local start %d", below, localStart)
	}

	check := func(who string, got []string) {
		t.Helper()
		if len(got) != len(committed) {
			t.Errorf("%s read_committed read %d records, want the %d committed", who, len(got), len(committed))
		}
		for i := range min(len(got), len(committed)) {
			if !strings.HasPrefix(got[i], committed[i]) {
				t.Fatalf("%s read_committed record %d is %.30q, want %s (local start %d)", who, i, got[i], committed[i], localStart)
			}
		}
	}
	var franz []string
	for _, r := range franzConsume(t, seeds[0], topic, 0, kgo.NewOffset().AtStart(), len(committed), kgo.FetchIsolationLevel(kgo.ReadCommitted())) {
		franz = append(franz, string(r.Value))
	}
	check("franz-go", franz)
	var kcat []string
	for _, r := range kcatConsume(t, seeds[0], topic, 0, "beginning", "-X", "isolation.level=read_committed") {
		kcat = append(kcat, r.Value)
	}
	check("kcat", kcat)
	t.Logf("%d committed records read back from offset 0 with the local log starting at %d; %d aborted records below it", len(committed), localStart, below)
}
