package integration

// The load the replication fault tests run (replication_faults_test.go):
// franz-go producers with acks=all, a group consumer committing its
// offsets, a watcher reading the committed offsets back, and a final reader,
// all recording into a history.History that proves at the end that nothing
// acknowledged was lost, duplicated, moved or reordered.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/integration/history"
	"github.com/spool-log/spool/internal/retry"
)

// replMaxMessageBytes is the topics' max.message.bytes: the producers'
// batches stay below it, and the poison records are above it, so the
// broker refuses them with MESSAGE_TOO_LARGE, a definite failure that must
// never show up in the log.
const replMaxMessageBytes = 4096

// soakCycles is how many times each fault scenario repeats its fault:
// SPOOL_SOAK_CYCLES (default 1, what CI runs).
func soakCycles(t testing.TB) int {
	t.Helper()
	v := os.Getenv("SPOOL_SOAK_CYCLES")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("SPOOL_SOAK_CYCLES=%q: want a positive count", v)
	}
	return n
}

// createReplicatedTopic creates topic with partitions and replication
// factor rf, waits until every running node lists it and every partition
// has a leader.
func createReplicatedTopic(t testing.TB, nodes []*Node, topic string, partitions int32, rf int16) {
	t.Helper()
	adm := kadm.NewClient(franzClient(t, nodes[0].KafkaAddr))
	size := strconv.Itoa(replMaxMessageBytes)
	// A node that has just seen its peers alive may not count them as
	// brokers for placement yet: INVALID_REPLICATION_FACTOR until it does.
	retry.Run(t, 30*time.Second, func() error {
		resp, err := adm.CreateTopic(ctxTimeout(t, 30*time.Second), partitions, rf, map[string]*string{"max.message.bytes": &size}, topic)
		if err == nil {
			err = resp.Err
		}
		if errors.Is(err, kerr.TopicAlreadyExists) {
			return nil // an earlier attempt's answer was lost
		}
		if err != nil {
			return fmt.Errorf("create topic %s (%d partitions, R=%d): %w", topic, partitions, rf, err)
		}
		return nil
	})
	waitTopicEverywhere(t, nodes, topic)
	for p := int32(0); p < partitions; p++ {
		waitLeader(t, nodes, topic, p, -1, 30*time.Second)
	}
	// Every node's Metadata names the leaders, not only one's: a client
	// that asks a node whose leadership table has not caught up yet sees
	// no leader, and kafka-go's Client.Produce fails at once on that.
	retry.Run(t, 30*time.Second, func() error {
		_, err := raftLeader(t, nodes, topic, partitions)
		return err
	})
}

// leaderOf asks the running nodes, in turn until one answers, which broker
// leads topic/p (-1: none).
func leaderOf(t testing.TB, nodes []*Node, topic string, p int32) (int32, error) {
	t.Helper()
	var errs []error
	for _, n := range nodes {
		if !n.Running() {
			continue
		}
		id, err := metadataLeader(n, topic, p)
		if err == nil {
			return id, nil
		}
		errs = append(errs, err)
	}
	return -1, fmt.Errorf("no node answered metadata: %w", errors.Join(errs...))
}

// waitLeader waits until a running node names a leader of topic/p other
// than not (-1: any), and returns it.
func waitLeader(t testing.TB, nodes []*Node, topic string, p int32, not int32, timeout time.Duration) *Node {
	t.Helper()
	var leader *Node
	retry.Run(t, timeout, func() error {
		id, err := leaderOf(t, nodes, topic, p)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if int32(n.ID) == id && id != not && n.Running() {
				leader = n
				return nil
			}
		}
		return fmt.Errorf("%s/%d: leader %d (want a running node other than %d)", topic, p, id, not)
	})
	return leader
}

func kafkaAddrs(nodes []*Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.KafkaAddr)
	}
	return out
}

// workload runs the load against one topic until stop.
type workload struct {
	t          *testing.T
	h          *history.History
	topic      string
	group      string
	partitions int32
	acked      []atomic.Int64 // per partition
	commits    atomic.Int64   // group commits acknowledged
	stopOnce   sync.Once
	ctx        context.Context // the load's lifetime
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	clients    []*kgo.Client
	// errMu guards produceErrs: what the producer's callbacks were given
	// (the poison producer's refusals are not kept).
	errMu       sync.Mutex
	produceErrs []error
}

// startWorkload starts, against the cluster reached through seeds:
// an idempotent acks=all producer writing unique values round-robin to
// every partition; a producer of poison records (too large, refused); a
// group consumer committing what it read after every poll; and a watcher
// fetching the group's committed offsets. Everything goes into the history.
func startWorkload(t *testing.T, seeds []string, topic string, partitions int32) *workload {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &workload{t: t, h: history.New(), topic: topic, group: "g-" + topic, partitions: partitions,
		acked: make([]atomic.Int64, partitions), ctx: ctx, cancel: cancel}
	t.Cleanup(w.stop)
	w.produce(ctx, "w", seeds, 2*time.Millisecond)
	w.poison(ctx, seeds)
	w.consume(ctx, seeds)
	w.watchOffsets(ctx, seeds)
	return w
}

func (w *workload) client(opts ...kgo.Opt) *kgo.Client {
	w.t.Helper()
	// Short network timeouts: a node cut off or stopped answers nothing,
	// and franz-go's defaults (10 s to dial, 10 s over each request's own
	// timeout) would make every step of a test wait tens of seconds.
	opts = append([]kgo.Opt{
		kgo.DialTimeout(2 * time.Second),
		kgo.RequestTimeoutOverhead(3 * time.Second),
		kgo.ProduceRequestTimeout(5 * time.Second),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		w.t.Fatalf("franz-go client: %v", err)
	}
	w.clients = append(w.clients, cl)
	return cl
}

// produce sends one record every interval, round-robin over the
// partitions, as producer name through a client bootstrapped at seeds.
func (w *workload) produce(ctx context.Context, name string, seeds []string, interval time.Duration) {
	cl := w.client(
		kgo.SeedBrokers(seeds...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(replMaxMessageBytes/2),
		kgo.MaxBufferedRecords(500),
		kgo.MetadataMinAge(250*time.Millisecond),
	)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for seq := 0; ; seq++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			value := fmt.Sprintf("%s-%d", name, seq)
			p := int32(seq) % w.partitions
			w.h.Send(name, value)
			cl.Produce(ctx, &kgo.Record{Topic: w.topic, Partition: p, Value: []byte(value)}, func(r *kgo.Record, err error) {
				if err != nil {
					w.h.Failed(value, err, definiteFailure(err))
					w.errMu.Lock()
					w.produceErrs = append(w.produceErrs, err)
					w.errMu.Unlock()
					return
				}
				w.h.Acked(value, r.Partition, r.Offset)
				w.acked[r.Partition].Add(1)
			})
		}
	}()
}

// definiteFailure tells whether a produce error means the broker refused
// the batch for what it is, so that no attempt can have been appended.
// Everything else (timeouts, NOT_LEADER after an attempt that timed out,
// a closed client) leaves the outcome unknown.
func definiteFailure(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) ||
		errors.Is(err, kerr.InvalidRecord) || errors.Is(err, kerr.CorruptMessage)
}

// poison sends, every 200 ms, a record larger than max.message.bytes with
// a producer whose client lets it through to the broker.
func (w *workload) poison(ctx context.Context, seeds []string) {
	cl := w.client(
		kgo.SeedBrokers(seeds...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20),
		kgo.ProducerBatchCompression(kgo.NoCompression()), // the padding would shrink below the limit
	)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		pad := make([]byte, 2*replMaxMessageBytes)
		for i := range pad {
			pad[i] = 'x'
		}
		for seq := 0; ctx.Err() == nil; seq++ {
			value := fmt.Sprintf("poison-%d-", seq)
			w.h.Send("poison", value)
			r := &kgo.Record{Topic: w.topic, Partition: int32(seq) % w.partitions, Value: append([]byte(value), pad...), Key: []byte(value)}
			err := cl.ProduceSync(ctx, r).FirstErr()
			if err != nil {
				w.h.Failed(value, err, definiteFailure(err))
			} else {
				w.h.Acked(value, r.Partition, r.Offset)
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
}

// consume runs a group consumer that commits what it read after every
// poll, recording each acknowledged commit.
func (w *workload) consume(ctx context.Context, seeds []string) {
	cl := w.client(
		kgo.SeedBrokers(seeds...),
		kgo.ConsumerGroup(w.group),
		kgo.ConsumeTopics(w.topic),
		kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.SessionTimeout(6*time.Second),
		kgo.RebalanceTimeout(10*time.Second),
		kgo.HeartbeatInterval(500*time.Millisecond),
	)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			if fs.Empty() {
				continue
			}
			mark := w.h.Mark()
			cl.CommitOffsetsSync(ctx, cl.UncommittedOffsets(), func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				if err != nil || req == nil || resp == nil {
					return
				}
				sent := map[history.GroupKey]int64{}
				for _, rt := range req.Topics {
					for _, rp := range rt.Partitions {
						sent[history.GroupKey{Group: w.group, Topic: rt.Topic, Partition: rp.Partition}] = rp.Offset
					}
				}
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						k := history.GroupKey{Group: w.group, Topic: rt.Topic, Partition: rp.Partition}
						if off, ok := sent[k]; ok && rp.ErrorCode == 0 {
							w.h.Committed(k, off, mark)
							w.commits.Add(1)
						}
					}
				}
			})
		}
	}()
}

// watchOffsets reads the group's committed offsets every 300 ms.
func (w *workload) watchOffsets(ctx context.Context, seeds []string) {
	adm := kadm.NewClient(w.client(kgo.SeedBrokers(seeds...)))
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for ctx.Err() == nil {
			w.fetchOffsets(ctx, adm)
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
}

// fetchOffsets records the group's committed offsets once (nothing on an
// error: its answer is unknown).
func (w *workload) fetchOffsets(ctx context.Context, adm *kadm.Client) error {
	mark := w.h.Mark()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(rctx, w.group)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		return err
	}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == w.topic {
			w.h.Fetched(history.GroupKey{Group: w.group, Topic: o.Topic, Partition: o.Partition}, o.At, mark)
		}
	})
	return nil
}

// ackedOn is how many records partition p acknowledged so far.
func (w *workload) ackedOn(p int32) int64 { return w.acked[p].Load() }

// waitProgress waits until each of parts (nil: all) acknowledged n more
// records than when called, and the group consumer had a commit
// acknowledged.
func (w *workload) waitProgress(t testing.TB, parts []int32, n int64, timeout time.Duration, why string) {
	t.Helper()
	if parts == nil {
		for p := int32(0); p < w.partitions; p++ {
			parts = append(parts, p)
		}
	}
	from := map[int32]int64{}
	for _, p := range parts {
		from[p] = w.ackedOn(p)
	}
	commits := w.commits.Load()
	start := time.Now()
	retry.Run(t, timeout, func() error {
		for _, p := range parts {
			if got := w.ackedOn(p) - from[p]; got < n {
				return fmt.Errorf("%s: partition %d acknowledged %d of %d records", why, p, got, n)
			}
		}
		if w.commits.Load() == commits {
			return fmt.Errorf("%s: no group commit acknowledged", why)
		}
		return nil
	})
	t.Logf("%s: %d records acknowledged on partitions %v and a group commit after %v", why, n, parts, time.Since(start).Round(time.Millisecond))
}

// stop stops the load; records still unanswered stay unknown.
func (w *workload) stop() {
	w.stopOnce.Do(func() {
		w.cancel()
		w.wg.Wait()
		for _, cl := range w.clients {
			cl.Close()
		}
	})
}

// check stops the load, reads every partition from its start through a
// client bootstrapped at seeds (past the high watermark and every
// acknowledged offset), reads the committed offsets once more, and fails
// the test on any violation of the history.
func (w *workload) check(t *testing.T, seeds []string) history.Result {
	t.Helper()
	w.stop()
	cl := franzClient(t, seeds[0], kgo.SeedBrokers(seeds...))
	adm := kadm.NewClient(cl)
	// A new leader's high watermark may lag for a moment (until it commits
	// an entry of its own term); one that stays below an acknowledged
	// offset fails here.
	ends := make([]int64, w.partitions)
	retry.Run(t, replStep, func() error {
		listed, err := adm.ListEndOffsets(ctxTimeout(t, 10*time.Second), w.topic)
		if err == nil {
			err = listed.Error()
		}
		if err != nil {
			return err
		}
		for p := int32(0); p < w.partitions; p++ {
			o, _ := listed.Lookup(w.topic, p)
			if last := w.lastAcked(p); o.Offset <= last {
				return fmt.Errorf("partition %d: high watermark %d, but offset %d was acknowledged", p, o.Offset, last)
			}
			ends[p] = o.Offset
		}
		return nil
	})
	for p := int32(0); p < w.partitions; p++ {
		w.readAll(t, seeds, p, ends[p])
	}
	retry.Run(t, 60*time.Second, func() error { return w.fetchOffsets(context.Background(), adm) })
	res := w.h.Check()
	t.Logf("history: %s", res)
	if !res.OK() {
		t.Errorf("history check failed: %s", res.Report())
	}
	if res.Acked == 0 || res.Checked != res.Acked || res.Commits == 0 {
		t.Errorf("history: %d of %d acknowledged records checked, %d commits: the load did not run", res.Checked, res.Acked, res.Commits)
	}
	return res
}

// lastAcked is the highest acknowledged offset of partition p (-1: none).
func (w *workload) lastAcked(p int32) int64 {
	last := int64(-1)
	for _, a := range w.h.AckedOffsets(p) {
		last = max(last, a)
	}
	return last
}

// readAll reads partition p from its start to end, control batches included
// (there should be none: Raft's own entries take no offset) so that the
// reader knows it reached end, and records every data record.
func (w *workload) readAll(t *testing.T, seeds []string, p int32, end int64) {
	t.Helper()
	if end == 0 {
		return
	}
	cl := franzClient(t, seeds[0], kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.topic: {p: kgo.NewOffset().AtStart()}}),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	next := int64(-1)
	for next < end {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s/%d: reached offset %d of %d before the deadline", w.topic, p, next, end)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("read %s/%d: %v (retrying)", w.topic, p, err) })
		for _, r := range fs.Records() {
			next = r.Offset + 1
			if !r.Attrs.IsControl() {
				w.h.Read(r.Partition, r.Offset, string(r.Value[:min(len(r.Value), valuePrefix(r.Value))]))
			}
		}
	}
}

// valuePrefix is the length of a record's unique value: a poison record
// carries padding after its "poison-N-" name.
func valuePrefix(v []byte) int {
	const poison = "poison-"
	if len(v) > len(poison) && string(v[:len(poison)]) == poison {
		for i := len(poison); i < len(v); i++ {
			if v[i] == '-' {
				return i + 1
			}
		}
	}
	return len(v)
}
