package hosted

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/partition"
	"github.com/spool-log/spool/wire"
)

// testLog is a partition.Log as a Log whose high watermark is its end (or
// hw, when set lower).
type testLog struct {
	l  *partition.Log
	hw int64 // -1: the log end
}

func (t *testLog) LogStartOffset() int64 { return t.l.StartOffset() }
func (t *testLog) LogEndOffset() int64   { return t.l.EndOffset() }
func (t *testLog) HighWatermark() int64 {
	if t.hw >= 0 {
		return t.hw
	}
	return t.l.EndOffset()
}
func (t *testLog) Read(offset int64, maxBytes int) (*partition.Slice, error) {
	return t.l.Read(offset, maxBytes, t.HighWatermark())
}

func openTestLog(t *testing.T, dir string) *testLog {
	t.Helper()
	l, err := partition.Open(dir, partition.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return &testLog{l: l, hw: -1}
}

// batch is a batch of n records of pid (transactional if txn; pid -1: no
// producer).
func batch(pid int64, epoch int16, seq int32, n int, txn bool) []byte {
	h := recordbatch.NoProducer()
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = pid, epoch, seq
	if pid < 0 {
		h.ProducerEpoch, h.BaseSequence = -1, -1
	}
	if txn {
		h.Attributes |= recordbatch.AttrTransactional
	}
	h.LastOffsetDelta = int32(n - 1)
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		recs[i] = recordbatch.Record{OffsetDelta: int64(i), Value: []byte("v")}
	}
	b, err := recordbatch.Build(nil, h, recs, nil)
	if err != nil {
		panic(err)
	}
	return b
}

func (t *testLog) append(tb testing.TB, b []byte) partition.AppendInfo {
	tb.Helper()
	info, err := t.l.Append(b, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return info
}

func TestMarkerBatchRoundTrip(t *testing.T) {
	for _, c := range []struct {
		commit bool
		epoch  int32
	}{{true, 0}, {false, 7}, {true, 1 << 30}} {
		b := MarkerBatch(42, 3, c.commit, c.epoch, 1234)
		h, err := partition.ParseBatchHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		if !h.Control() || !h.Transactional() || h.ProducerID != 42 || h.ProducerEpoch != 3 || h.FirstTimestamp != 1234 {
			t.Fatalf("marker header %+v", h)
		}
		commit, epoch, ok := parseMarker(b)
		if !ok || commit != c.commit || epoch != c.epoch {
			t.Fatalf("parsed commit %v epoch %d ok %v, want %v %d", commit, epoch, ok, c.commit, c.epoch)
		}
	}
	if _, _, ok := parseMarker(batch(1, 0, 0, 1, true)); ok {
		t.Fatal("a data batch parsed as a marker")
	}
}

// The index over a log with a committed, an aborted and an open
// transaction: last stable offset, aborted list, open transactions; a
// checkpoint it writes resumes a new index; the producer state rebuilt
// from the same log knows the markers.
func TestTxnIndexOverLog(t *testing.T) {
	dir := t.TempDir()
	log := openTestLog(t, dir)
	const a, b, c = 10, 20, 30
	log.append(t, batch(-1, 0, 0, 2, false))                  // 0-1
	log.append(t, batch(a, 0, 0, 2, true))                    // 2-3
	log.append(t, batch(b, 0, 0, 1, true))                    // 4
	log.append(t, MarkerBatch(a, 0, true, 5, 0))              // 5: a commits
	log.append(t, MarkerBatch(b, 0, false, 5, 0))             // 6: b aborts
	log.append(t, batch(-1, 0, 0, 1, false))                  // 7
	open := log.append(t, batch(c, 1, 0, 3, true)).BaseOffset // 8-10: c open
	log.append(t, batch(-1, 0, 0, 1, false))                  // 11

	var x TxnIndex
	if st := x.StableOffset(log.HighWatermark(), log.LogStartOffset()); st != 0 {
		t.Fatalf("last stable offset before any scan %d, want the log start 0", st)
	}
	hooked := 0
	SetScanHook(func() { hooked++ })
	t.Cleanup(func() { SetScanHook(nil) })
	if err := x.Refresh(log, dir); err != nil {
		t.Fatal(err)
	}
	if hooked == 0 {
		t.Fatal("scan hook not called")
	}
	if st := x.StableOffset(log.HighWatermark(), log.LogStartOffset()); st != open {
		t.Fatalf("last stable offset %d, want %d (c's first offset)", st, open)
	}
	if first, ok := x.OpenSince(c); !ok || first != open {
		t.Fatalf("OpenSince(c) = %d %v", first, ok)
	}
	if _, ok := x.OpenSince(a); ok {
		t.Fatal("a's committed transaction still open")
	}
	want := []wire.FetchAborted{{ProducerID: b, FirstOffset: 4}}
	if got := x.AbortedBetween(0, 12); !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted in [0, 12): %+v, want %+v", got, want)
	}
	if got := x.AbortedBetween(7, 12); len(got) != 0 {
		t.Fatalf("aborted in [7, 12): %+v, want none (b's marker is at 6)", got)
	}
	if got := x.AbortedBetween(0, 4); len(got) != 0 {
		t.Fatalf("aborted in [0, 4): %+v, want none (b's first is 4)", got)
	}
	st := x.Snapshot()
	if !st.Built || st.Scanned != 12 || st.Checkpointed != 0 || !reflect.DeepEqual(st.Open, map[int64]int64{c: open}) ||
		!reflect.DeepEqual(st.Aborted, []AbortedTxn{{ProducerID: b, FirstOffset: 4, MarkerOffset: 6}}) {
		t.Fatalf("snapshot %+v", st)
	}

	// An abort was learnt: the checkpoint is due.
	x.FlushCheckpoint(dir)
	if _, err := os.Stat(filepath.Join(dir, TxnIndexFile)); err != nil {
		t.Fatalf("no checkpoint: %v", err)
	}
	if st := x.Snapshot(); st.Checkpointed != 12 {
		t.Fatalf("checkpointed %d, want 12", st.Checkpointed)
	}
	var y TxnIndex
	SetScanHook(func() { t.Error("a scan read the log with nothing after the checkpoint") })
	if err := y.Refresh(log, dir); err != nil {
		t.Fatal(err)
	}
	SetScanHook(nil)
	if got, want := y.Snapshot(), x.Snapshot(); !reflect.DeepEqual(got, want) {
		t.Fatalf("resumed %+v, want %+v", got, want)
	}
	// c commits after the checkpoint: the resumed index scans on.
	log.append(t, MarkerBatch(c, 1, true, 5, 0)) // 12
	if err := y.Refresh(log, dir); err != nil {
		t.Fatal(err)
	}
	if st := y.StableOffset(log.HighWatermark(), log.LogStartOffset()); st != 13 {
		t.Fatalf("last stable offset %d after c commits, want the high watermark 13", st)
	}

	// Forget: scanned again from the log start, as without a checkpoint.
	y.Forget()
	if st := y.StableOffset(log.HighWatermark(), log.LogStartOffset()); st != 0 {
		t.Fatalf("last stable offset of a forgotten index %d, want the log start", st)
	}
	if err := y.Refresh(log, dir); err != nil {
		t.Fatal(err)
	}
	if st := y.Snapshot(); st.Scanned != 13 || len(st.Open) != 0 || len(st.Aborted) != 1 {
		t.Fatalf("rescanned %+v", st)
	}

	ps := NewProducers()
	if err := ps.Rebuild(log, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, cOld := ps.MarkerFenced(a, 0, 4); !cOld {
		t.Fatal("rebuilt state does not know a's marker of coordinator epoch 5")
	}
	if open, m := ps.TxnView(c, 1); open || m != 1 {
		t.Fatalf("rebuilt c: open %v markers %d", open, m)
	}
	if d := ps.Describe(); len(d) != 3 {
		t.Fatalf("rebuilt %d producers, want 3: %+v", len(d), d)
	}
}

// A checkpoint of another log (its last batch not in this one) is not
// trusted: the index scans this log from its start.
func TestTxnIndexCheckpointOfOtherLogHere(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	la, lb := openTestLog(t, dirA), openTestLog(t, dirB)
	la.append(t, batch(1, 0, 0, 1, true))
	la.append(t, MarkerBatch(1, 0, false, 0, 0))
	lb.append(t, batch(-1, 0, 0, 1, false))
	lb.append(t, batch(-1, 0, 0, 1, false))
	var x TxnIndex
	if err := x.Refresh(la, dirA); err != nil {
		t.Fatal(err)
	}
	x.FlushCheckpoint(dirA)
	ck, err := os.ReadFile(filepath.Join(dirA, TxnIndexFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirB, TxnIndexFile), ck, 0o644); err != nil {
		t.Fatal(err)
	}
	var y TxnIndex
	if err := y.Refresh(lb, dirB); err != nil {
		t.Fatal(err)
	}
	if st := y.Snapshot(); st.Checkpointed != 0 || st.Scanned != 2 || len(st.Open) != 0 || len(st.Aborted) != 0 {
		t.Fatalf("index of B trusts A's checkpoint: %+v", st)
	}
}

// The high watermark bounds the scan: what is above it is not indexed.
func TestTxnIndexStopsAtHighWatermark(t *testing.T) {
	dir := t.TempDir()
	log := openTestLog(t, dir)
	log.append(t, batch(-1, 0, 0, 2, false))
	log.append(t, batch(5, 0, 0, 1, true)) // 2: open, not committed yet
	log.hw = 2
	var x TxnIndex
	if err := x.Refresh(log, dir); err != nil {
		t.Fatal(err)
	}
	if st := x.StableOffset(log.HighWatermark(), log.LogStartOffset()); st != 2 {
		t.Fatalf("last stable offset %d, want the high watermark 2", st)
	}
	log.hw = -1
	if err := x.Refresh(log, dir); err != nil {
		t.Fatal(err)
	}
	if st := x.StableOffset(log.HighWatermark(), log.LogStartOffset()); st != 2 {
		t.Fatalf("last stable offset %d, want 2 (the open transaction)", st)
	}
}
