package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node/coord"
	"github.com/spool-log/spool/node/group"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/txn"
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
	l, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := l["tx-1"]; !ok || s.State != "CompleteCommit" {
		t.Fatalf("list transactions: %+v", l)
	}
	// Two commits and an abort, in Prometheus' /metrics after a flush.
	retry.Run(t, 10*time.Second, func() error {
		resp, err := http.Get("http://" + n.AdminAddr() + "/metrics")
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, want := range []string{"spool_txn_committed 2", "spool_txn_aborted 1", "spool_txn_open 0"} {
			if !strings.Contains(string(body), want) {
				return fmt.Errorf("/metrics has no %q", want)
			}
		}
		return nil
	})
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

// etlWorker runs a franz-go GroupTransactSession: consume from in,
// produce each record to out, commit, in one transaction per poll. It
// stops after quitAfter transactions (aborting the last, as a consumer
// that dies mid-transaction), when done is closed, or on ctx's end.
// Committed input offsets go to seen, which fails on a repeat.
func etlWorker(t *testing.T, ctx context.Context, n *Node, id, group, in, out string, quitAfter int, done <-chan struct{}, seen *etlSeen) {
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(n.KafkaAddr()),
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(20*time.Second),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.SessionTimeout(6*time.Second),
		kgo.RetryTimeout(20*time.Second),
	)
	if err != nil {
		seen.fail(err)
		return
	}
	defer sess.Close()
	txns := 0
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := sess.PollRecords(pctx, 50) // small transactions: the dying worker leaves work behind
		cancel()
		if fs.Err0() != nil && (errors.Is(fs.Err0(), context.DeadlineExceeded) || errors.Is(fs.Err0(), context.Canceled)) {
			continue
		}
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			seen.fail(fmt.Errorf("%s begin: %w", id, err))
			return
		}
		type po struct {
			p   int32
			off int64
		}
		var got []po
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, po{r.Partition, r.Offset})
			sess.Produce(ctx, &kgo.Record{Topic: out, Key: append([]byte(nil), r.Key...), Value: r.Value}, func(_ *kgo.Record, err error) {
				if err != nil && !errors.Is(err, kgo.ErrAborting) {
					seen.fail(fmt.Errorf("%s produce: %w", id, err))
				}
			})
		})
		commit := quitAfter < 0 || txns < quitAfter
		committed, err := sess.End(ctx, kgo.TransactionEndTry(commit))
		if err != nil {
			seen.fail(fmt.Errorf("%s end: %w", id, err))
			return
		}
		if !commit {
			return // dies after its aborted transaction
		}
		if !committed {
			continue
		}
		txns++
		for _, g := range got {
			seen.add(g.p, g.off)
		}
	}
}

type etlSeen struct {
	mu   sync.Mutex
	offs map[[2]int64]bool
	errs []error
}

func (s *etlSeen) add(p int32, off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]int64{int64(p), off}
	if s.offs[k] {
		s.errs = append(s.errs, fmt.Errorf("input %d/%d committed twice", p, off))
	}
	s.offs[k] = true
}

func (s *etlSeen) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, err)
}

func (s *etlSeen) count() (int, []error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.offs), append([]error(nil), s.errs...)
}

// TestTxnGroupTransactSession: consume-transform-produce with franz-go's
// GroupTransactSession; one consumer dies mid-stream (its last
// transaction aborted) and another joins later (two rebalances); the
// output, read_committed, holds every input record exactly once.
func TestTxnGroupTransactSession(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.Groups.InitialRebalanceDelay = 0
	n := startNode(t, cfg)
	adm := newAdmin(t, n)
	createTopic(t, adm, "etl-in", 3, nil)
	createTopic(t, adm, "etl-out", 3, nil)
	const total = 600
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pr := newClient(t, n, kgo.DefaultProduceTopic("etl-in"))
	for i := range total {
		pr.Produce(ctx, &kgo.Record{Key: []byte(recordKey(i)), Value: []byte("v")}, nil)
		if i%100 == 99 {
			if err := pr.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := pr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	seen := &etlSeen{offs: map[[2]int64]bool{}}
	done := make(chan struct{})
	var wg sync.WaitGroup
	run := func(id string, quitAfter int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			etlWorker(t, ctx, n, id, "etl", "etl-in", "etl-out", quitAfter, done, seen)
		}()
	}
	run("etl-a", 3) // dies after 3 committed transactions
	run("etl-b", -1)
	retry.Run(t, 60*time.Second, func() error {
		c, errs := seen.count()
		if len(errs) > 0 {
			t.Fatalf("errors: %v", errs)
		}
		return retry.Check(c >= total/3, "%d of %d consumed", c, total)
	})
	run("etl-c", -1)
	retry.Run(t, 60*time.Second, func() error {
		c, errs := seen.count()
		if len(errs) > 0 {
			t.Fatalf("errors: %v", errs)
		}
		return retry.Check(c >= total, "%d of %d consumed", c, total)
	})
	close(done)
	wg.Wait()
	if c, errs := seen.count(); len(errs) > 0 || c != total {
		t.Fatalf("consumed %d of %d; errors: %v", c, total, errs)
	}
	got := readKeys(t, n, "etl-out", total, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if len(got) != total {
		t.Fatalf("output holds %d distinct keys, want %d", len(got), total)
	}
	for k, c := range got {
		if c != 1 {
			t.Fatalf("output holds %q %d times", k, c)
		}
	}
}

// txnCoordinatorNode is the node leading txnID's __transaction_state
// partition.
func txnCoordinatorNode(nodes []*Node, txnID string) (*Node, error) {
	return partitionLeader(nodes, txn.TopicName, group.PartitionFor(txnID, coord.TransactionStatePartitions))
}

// TestTxnCoordinatorFailover: three nodes, R=3. Two transactional ids
// coordinated by the same node: one's transaction has just been committed
// (EndTxn answered: the prepare is durable, markers may still be on their
// way), the other's is ongoing. The coordinator's node stops; the new
// coordinator, replaying __transaction_state, finishes the first
// transaction's markers on its own and commits the second when its
// producer asks. A read_committed consumer sees every committed record
// exactly once.
func TestTxnCoordinatorFailover(t *testing.T) {
	nodes := startCluster(t, 3)
	const topic = "txn-fo"
	startReplicatedTopic(t, nodes, topic, 2, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	opts := func(id string) []kgo.Opt {
		return []kgo.Opt{kgo.SeedBrokers(seedsOf(nodes)...), kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic),
			kgo.RetryTimeout(45 * time.Second), kgo.TransactionTimeout(60 * time.Second), kgo.ProduceRequestTimeout(5 * time.Second)}
	}
	// Warm up: creates __transaction_state and elects its leaders.
	warm, err := kgo.NewClient(opts("tx-warm")...)
	if err != nil {
		t.Fatal(err)
	}
	defer warm.Close()
	if err := txnProduce(t, ctx, warm, topic, "warm", 10, true); err != nil {
		t.Fatal(err)
	}
	waitTopic(t, nodes, txn.TopicName)
	// Two ids whose coordinator is the same node.
	var idA, idB string
	var coord *Node
	byNode := map[int32]string{}
	retry.Run(t, 30*time.Second, func() error {
		for i := range 200 {
			id := fmt.Sprintf("tx-fo-%d", i)
			c, err := txnCoordinatorNode(nodes, id)
			if err != nil {
				return err
			}
			if other, ok := byNode[c.NodeID()]; ok && other != id {
				idA, idB, coord = other, id, c
				return nil
			}
			byNode[c.NodeID()] = id
		}
		return errors.New("no two ids share a coordinator")
	})
	clA, err := kgo.NewClient(opts(idA)...)
	if err != nil {
		t.Fatal(err)
	}
	defer clA.Close()
	clB, err := kgo.NewClient(opts(idB)...)
	if err != nil {
		t.Fatal(err)
	}
	defer clB.Close()
	if err := txnProduce(t, ctx, clA, topic, "a1", 20, true); err != nil {
		t.Fatal(err)
	}
	// B: ongoing.
	if err := clB.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := clB.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprintf("b1-%d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// A: committed; the coordinator stops right after answering.
	if err := txnProduce(t, ctx, clA, topic, "a2", 20, true); err != nil {
		t.Fatal(err)
	}
	stopNode(t, coord)
	var rest []*Node
	for _, n := range nodes {
		if n != coord {
			rest = append(rest, n)
		}
	}
	// B's commit reaches the new coordinator.
	want := 10 + 40
	if err := clB.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Logf("B's commit after failover failed (%v): its records must not be seen", err)
	} else {
		want += 20
	}
	// A goes on with the new coordinator. A produce may still fail while
	// the clients learn the new leaders (franz-go: "unknown broker"); the
	// transaction is then aborted and tried again under other keys.
	for try := 0; ; try++ {
		err := txnProduce(t, ctx, clA, topic, fmt.Sprintf("a3-%d", try), 20, true)
		if err == nil {
			break
		}
		if try == 4 {
			t.Fatal(err)
		}
		t.Logf("transaction a3-%d: %v; again", try, err)
	}
	want += 20
	cons, err := kgo.NewClient(kgo.SeedBrokers(seedsOf(rest)...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]int{}
	for len(seen) < want {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d committed records: %v", len(seen), want, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			k := string(r.Key)
			seen[k]++
			if seen[k] > 1 {
				t.Errorf("record %s read twice", k)
			}
		})
	}
	// Nothing beyond: the log end, read_committed, holds no more.
	tail, cancelTail := context.WithTimeout(ctx, time.Second)
	defer cancelTail()
	fs := cons.PollFetches(tail)
	if extra := fs.NumRecords(); extra > 0 {
		t.Fatalf("%d records beyond the %d committed", extra, want)
	}
	if len(seen) != want {
		t.Fatalf("saw %d records, want %d", len(seen), want)
	}
}

// TestTxnTimeoutAborts: a transaction left open past its timeout is
// aborted by the coordinator with the producer's epoch bumped: its
// producer cannot commit it, read_committed never sees its records, and
// the partition's last stable offset moves past it, so later committed
// records are readable.
func TestTxnTimeoutAborts(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.TxnAbortInterval = 100 * time.Millisecond
	n := startNode(t, cfg)
	createTopic(t, newAdmin(t, n), "txn-to", 1, nil)
	ctx := testCtx(t)
	slow := newClient(t, n, kgo.TransactionalID("tx-slow"), kgo.TransactionTimeout(time.Second))
	if err := slow.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := slow.ProduceSync(ctx, &kgo.Record{Topic: "txn-to", Key: []byte("abandoned")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	lp := n.parts.Get("txn-to", 0)
	if lso, _ := lp.Stable(); lso != 0 {
		t.Fatalf("last stable offset %d with a transaction open at 0", lso)
	}
	// DescribeProducers shows where the open transaction starts, and
	// ListOffsets read_committed stops there.
	dp, err := newAdmin(t, n).DescribeProducers(ctx, kadm.TopicsSet{"txn-to": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	producers := 0
	dp.EachProducer(func(p kadm.DescribedProducer) {
		producers++
		if p.CurrentTxnStartOffset != 0 {
			t.Errorf("producer %d: current transaction starts at %d, want 0", p.ProducerID, p.CurrentTxnStartOffset)
		}
	})
	if producers != 1 {
		t.Fatalf("DescribeProducers listed %d producers, want 1", producers)
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.IsolationLevel = 1
	lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "txn-to", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1, CurrentLeaderEpoch: -1}}}}
	if r, err := lo.RequestWith(ctx, slow); err != nil || r.Topics[0].Partitions[0].Offset != 0 {
		t.Fatalf("ListOffsets read_committed latest: %+v %v, want 0", r, err)
	}
	// Aborted: the marker moves the last stable offset past it.
	retry.Run(t, 10*time.Second, func() error {
		lso, err := lp.Stable()
		if err != nil {
			return err
		}
		return retry.Check(lso == lp.Replica.HighWatermark() && lso >= 2, "last stable offset %d, high watermark %d", lso, lp.Replica.HighWatermark())
	})
	if err := slow.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("a transaction aborted for its timeout was committed")
	} else if !errors.Is(err, kerr.ProducerFenced) {
		// As Kafka answers EndTxn v2+ at an older epoch.
		t.Fatalf("commit after the timeout: %v, want PRODUCER_FENCED", err)
	}
	other := newClient(t, n, kgo.TransactionalID("tx-other"))
	if err := txnProduce(t, ctx, other, "txn-to", "ok", 5, true); err != nil {
		t.Fatal(err)
	}
	got := readKeys(t, n, "txn-to", 5, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if got["abandoned"] != 0 || len(got) != 5 {
		t.Fatalf("read_committed saw %v", got)
	}
	if c := n.coords.Txns.TimedOut(); c != 1 {
		t.Fatalf("timed-out transactions: %d, want 1", c)
	}
}

// AddPartitionsToTxn v4 (the batched form): several transactions in one
// request, answered one by one; VerifyOnly checks without adding.
func TestTxnAddPartitionsV4(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	createTopic(t, newAdmin(t, n), "txn-v4", 2, nil)
	ctx := testCtx(t)
	cl := newClient(t, n)
	var ids [2]struct {
		pid   int64
		epoch int16
	}
	for i, id := range []string{"v4-a", "v4-b"} {
		// The first creates __transaction_state; retried while its
		// partitions elect leaders.
		retry.Run(t, 10*time.Second, func() error {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			if resp.ErrorCode != 0 {
				return kerr.ErrorForCode(resp.ErrorCode)
			}
			ids[i].pid, ids[i].epoch = resp.ProducerID, resp.ProducerEpoch
			return nil
		})
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	add := func(id string, i int, verify bool, p int32) {
		tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly = id, ids[i].pid, ids[i].epoch, verify
		tr.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "txn-v4", Partitions: []int32{p}}}
		req.Transactions = append(req.Transactions, tr)
	}
	add("v4-a", 0, false, 0)
	add("v4-b", 1, true, 1)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version != 4 || len(resp.Transactions) != 2 {
		t.Fatalf("response v%d with %d transactions", resp.Version, len(resp.Transactions))
	}
	codes := map[string]int16{}
	for _, tr := range resp.Transactions {
		codes[tr.TransactionalID] = tr.Topics[0].Partitions[0].ErrorCode
	}
	if codes["v4-a"] != 0 || codes["v4-b"] != kerr.InvalidTxnState.Code {
		t.Fatalf("codes %v: want v4-a added, v4-b not in a transaction", codes)
	}
	// v4-a's partition is in its transaction now.
	d, err := newAdmin(t, n).DescribeTransactions(ctx, "v4-a")
	if err != nil {
		t.Fatal(err)
	}
	if s := d["v4-a"]; s.State != "Ongoing" || len(s.Topics["txn-v4"]) != 1 {
		t.Fatalf("v4-a: %+v", s)
	}
}

// The read_committed view survives a restart: from the txn-index
// checkpoint, and from the log alone when the checkpoint is damaged.
func TestTxnIndexAcrossRestart(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	n := startNode(t, cfg)
	createTopic(t, newAdmin(t, n), "txn-rs", 1, nil)
	ctx := testCtx(t)
	cl := newClient(t, n, kgo.TransactionalID("tx-rs"))
	for _, c := range []struct {
		prefix string
		commit bool
	}{{"c1", true}, {"ab", false}, {"c2", true}} {
		if err := txnProduce(t, ctx, cl, "txn-rs", c.prefix, 5, c.commit); err != nil {
			t.Fatal(err)
		}
	}
	check := func(n *Node) {
		t.Helper()
		got := readKeys(t, n, "txn-rs", 10, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		for k, c := range got {
			if c != 1 || strings.HasPrefix(k, "ab") {
				t.Fatalf("read_committed saw %q %d times", k, c)
			}
		}
	}
	check(n)
	cl.Close()
	// Written off the fetch path, at the latest when the node stops.
	stopNode(t, n)
	path := filepath.Join(cfg.DataDir, "txn-rs-0", hosted.TxnIndexFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no checkpoint: %v", err)
	}
	if !strings.Contains(string(b), `"aborted":[[`) {
		t.Fatalf("checkpoint without the aborted transaction: %s", b)
	}

	n = startNode(t, cfg)
	check(n)
	p := n.parts.Get("txn-rs", 0)
	st := p.Txns.Snapshot()
	resumed := st.Checkpointed > 0 && len(st.Aborted) == 1
	if !resumed {
		t.Fatal("the index did not resume from its checkpoint")
	}
	stopNode(t, n)

	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	n = startNode(t, cfg)
	check(n)
}
