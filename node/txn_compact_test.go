package node

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/compaction"
	"github.com/spool-log/spool/partition"
)

// countMarkers counts the transaction markers in lp's committed log.
func countMarkers(t *testing.T, lp *localPartition) int {
	t.Helper()
	markers := 0
	for next := lp.Replica.LogStartOffset(); next < lp.Replica.HighWatermark(); {
		s, err := lp.Replica.Read(next, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var b []byte
		for _, r := range s.Regions {
			buf := make([]byte, r.Length)
			if _, err := r.File.ReadAt(buf, r.Position); err != nil {
				t.Fatal(err)
			}
			b = append(b, buf...)
		}
		s.Release()
		if len(b) == 0 {
			t.Fatalf("read at %d returned nothing", next)
		}
		for len(b) >= partition.BatchHeaderSize {
			h, _ := partition.ParseBatchHeader(b)
			if h.Control() && h.Transactional() {
				markers++
			}
			next = h.LastOffset() + 1
			b = b[h.Size():]
		}
	}
	return markers
}

// txnRound produces one franz-go transaction of the records and commits or
// aborts it.
func txnRound(t *testing.T, ctx context.Context, cl *kgo.Client, commit bool, rs ...*kgo.Record) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatal(err)
	}
}

// TestTxnCompactedTopicCleaned writes a compacted topic with committed and
// aborted franz-go transactions, cleans it twice (delete.retention.ms=0, so
// emptied markers go on the second pass), and checks that both isolation
// levels see exactly the newest committed value of each key, no aborted
// value, and that most markers are gone.
func TestTxnCompactedTopicCleaned(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	const topic = "txn-compacted"
	createTopic(t, adm, topic, 1, map[string]*string{
		"cleanup.policy": kmsg.StringPtr("compact"), "segment.bytes": kmsg.StringPtr("4096"), "delete.retention.ms": kmsg.StringPtr("0"),
	})
	ctx := testCtx(t)
	cl := newClient(t, n, kgo.TransactionalID("tx-compacted"), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
	pad := strings.Repeat("p", 100)
	want := map[string]string{}
	round := func(r int, prefix string, commit bool) {
		var rs []*kgo.Record
		for k := range 10 {
			key, val := fmt.Sprintf("%s-%d", prefix, k), fmt.Sprintf("%s-round-%d-%s", prefix, r, pad)
			if !commit {
				val = "aborted-" + val
			}
			rs = append(rs, &kgo.Record{Key: []byte(key), Value: []byte(val)})
			if commit {
				want[key] = val
			}
		}
		txnRound(t, ctx, cl, commit, rs...)
	}
	for r := range 30 {
		round(r, "k", r%3 != 1)
	}
	// Committed filler so that every round above is in closed segments.
	for r := range 6 {
		round(r, "f", true)
	}
	plain := newClient(t, n, kgo.DefaultProduceTopic(topic))
	if err := plain.ProduceSync(ctx, &kgo.Record{Key: []byte("end"), Value: []byte("end")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	want["end"] = "end"
	lp := n.parts.Get(topic, 0)
	lp.Replica.Flush()
	before, size := countMarkers(t, lp), lp.Replica.Size()
	st1, err := lp.Replica.Clean(compaction.MapBytes)
	if err != nil || st1.AbortedRemoved == 0 {
		t.Fatalf("first clean: %+v, %v", st1, err)
	}
	st2, err := lp.Replica.Clean(compaction.MapBytes)
	if err != nil {
		t.Fatalf("second clean: %v", err)
	}
	after := countMarkers(t, lp)
	t.Logf("markers %d -> %d, bytes %d -> %d; first pass %+v; second pass %+v", before, after, size, lp.Replica.Size(), st1, st2)
	if before < 36 || after > before/4 || st1.MarkersRemoved+st2.MarkersRemoved != int64(before-after) {
		t.Fatalf("markers %d -> %d, removed %d + %d", before, after, st1.MarkersRemoved, st2.MarkersRemoved)
	}
	for iso, level := range map[string]kgo.IsolationLevel{"read_committed": kgo.ReadCommitted(), "read_uncommitted": kgo.ReadUncommitted()} {
		c := newClient(t, n, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(level))
		got := map[string]string{}
		for got["end"] == "" {
			fs := c.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s: consumed %d keys: %v", iso, len(got), ctx.Err())
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
			for _, r := range fs.Records() {
				if strings.HasPrefix(string(r.Value), "aborted-") {
					t.Fatalf("%s: read aborted record %s=%s at %d", iso, r.Key, r.Value, r.Offset)
				}
				got[string(r.Key)] = string(r.Value)
			}
		}
		c.Close()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: newest values differ after cleaning:\n got %v\nwant %v", iso, got, want)
		}
	}
}
