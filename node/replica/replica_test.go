package replica

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/partition"
)

// batch encodes an uncompressed RecordBatch v2 holding values, timestamped
// ts.
func batch(ts int64, values ...string) []byte {
	vs := make([][]byte, len(values))
	for i, v := range values {
		vs[i] = []byte(v)
	}
	return recordbatch.Simple(ts, vs...)
}

func openReplica(t *testing.T, dir string, cfg Config) *Replica {
	t.Helper()
	log, err := partition.Open(dir, partition.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	r := New(log, cfg)
	t.Cleanup(func() { r.Close() })
	return r
}

func leaderOf(t *testing.T, dir string) *Replica {
	return openReplica(t, dir, Config{Self: 1, Replicas: []int32{1, 2, 3}})
}

// headers reads the headers of every batch from offset up to the high
// watermark.
func headers(t *testing.T, r *Replica, from int64) []partition.BatchHeader {
	t.Helper()
	s, err := r.Read(from, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	var out []partition.BatchHeader
	for _, reg := range s.Regions {
		buf := make([]byte, reg.Length)
		if _, err := reg.File.ReadAt(buf, reg.Position); err != nil {
			t.Fatal(err)
		}
		for len(buf) >= partition.BatchHeaderSize {
			h, err := partition.ParseBatchHeader(buf)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, h)
			buf = buf[h.Size():]
		}
	}
	return out
}

func TestProduceAcks(t *testing.T) {
	r := leaderOf(t, t.TempDir())
	ctx := context.Background()
	want := int64(0)
	for _, acks := range []Acks{AcksNone, AcksLeader, AcksAll} {
		info, err := r.Produce(ctx, batch(1000, "a", "b"), acks)
		if err != nil {
			t.Fatalf("acks=%d: %v", acks, err)
		}
		if info.BaseOffset != want || info.LastOffset != want+1 {
			t.Fatalf("acks=%d: offsets [%d, %d], want [%d, %d]", acks, info.BaseOffset, info.LastOffset, want, want+1)
		}
		want += 2
		// Single copy: what the leader appended is committed, whatever acks.
		if hw, end := r.HighWatermark(), r.LogEndOffset(); hw != want || end != want {
			t.Fatalf("acks=%d: high watermark %d, log end %d, want %d", acks, hw, end, want)
		}
		if err := r.WaitCommitted(ctx, info.LastOffset); err != nil {
			t.Fatalf("acks=%d: committed offset %d not reported committed: %v", acks, info.LastOffset, err)
		}
	}
	if st := r.State(); st.Leader != 1 || st.LeaderEpoch != r.LeaderEpoch() || !slices.Equal(st.ISR, []int32{1}) || len(st.Offline) != 0 {
		t.Fatalf("leader state: %+v", st)
	}
	hs := headers(t, r, 0)
	if len(hs) != 3 {
		t.Fatalf("read %d batches, want 3", len(hs))
	}
	for i, h := range hs {
		if h.BaseOffset != int64(2*i) || h.PartitionLeaderEpoch != r.LeaderEpoch() {
			t.Fatalf("batch %d: base offset %d, leader epoch %d; want %d, %d", i, h.BaseOffset, h.PartitionLeaderEpoch, 2*i, r.LeaderEpoch())
		}
	}
	if _, err := r.Produce(ctx, []byte("not a batch"), AcksAll); err == nil || r.HighWatermark() != want {
		t.Fatalf("garbage appended (err %v, high watermark %d)", err, r.HighWatermark())
	}
}

func TestReadUpToHighWatermark(t *testing.T) {
	r := leaderOf(t, t.TempDir())
	if _, err := r.Append(batch(1, "x")); err != nil {
		t.Fatal(err)
	}
	s, err := r.Read(r.HighWatermark(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if s.Size() != 0 {
		t.Fatalf("read at the high watermark returned %d bytes", s.Size())
	}
	s.Release()
	if _, err := r.Read(r.HighWatermark()+1, 1<<20); !errors.Is(err, partition.ErrOffsetOutOfRange) {
		t.Fatalf("read past the high watermark: %v, want offset out of range", err)
	}
	if _, err := r.DeleteRecordsBefore(context.Background(), r.HighWatermark()+1); !errors.Is(err, partition.ErrOffsetOutOfRange) {
		t.Fatalf("delete records above the high watermark: %v, want offset out of range", err)
	}
	if start, err := r.DeleteRecordsBefore(context.Background(), 1); err != nil || start != 1 || r.LogStartOffset() != 1 {
		t.Fatalf("delete records before 1: start %d, %v", start, err)
	}
	if off, ts, err := r.OffsetForTime(2); err != nil || off != -1 || ts != -1 {
		t.Fatalf("offset for a time past every record: %d, %d, %v", off, ts, err)
	}
}

func TestWaitCommitted(t *testing.T) {
	r := leaderOf(t, t.TempDir())
	done := make(chan error, 1)
	go func() { done <- r.WaitCommitted(context.Background(), 2) }()
	for i := range 3 {
		if _, err := r.Append(batch(1, "x")); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			select {
			case err := <-done:
				t.Fatalf("wait for offset 2 returned at high watermark %d: %v", r.HighWatermark(), err)
			default:
			}
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("wait for offset 2 after it was committed: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.WaitCommitted(ctx, 10); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait with a canceled context: %v", err)
	}
	go func() { done <- r.WaitCommitted(context.Background(), 10) }()
	r.Close()
	if err := <-done; !errors.Is(err, partition.ErrClosed) {
		t.Fatalf("wait across close: %v, want ErrClosed", err)
	}
	if _, err := r.Append(batch(1, "late")); !errors.Is(err, partition.ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
}

func TestLongPollWakeUp(t *testing.T) {
	r := leaderOf(t, t.TempDir())
	a, b := make(chan struct{}, 1), make(chan struct{}, 1)
	r.AddWaiter(a)
	r.AddWaiter(b)
	if n := r.Waiting(); n != 2 {
		t.Fatalf("%d waiters, want 2", n)
	}
	// Two appends, one signal each channel has room for: the second
	// append must not block on a fetch that has not woken yet.
	for range 2 {
		if _, err := r.Append(batch(1, "x")); err != nil {
			t.Fatal(err)
		}
	}
	for name, ch := range map[string]chan struct{}{"a": a, "b": b} {
		select {
		case <-ch:
		default:
			t.Fatalf("waiter %s not woken by an append", name)
		}
	}
	r.RemoveWaiter(b)
	if _, err := r.Append(batch(1, "y")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b:
		t.Fatal("removed waiter woken")
	default:
	}
	<-a
	// A refused append moves nothing and wakes nobody.
	if _, err := r.Append([]byte("junk")); err == nil {
		t.Fatal("junk appended")
	}
	select {
	case <-a:
		t.Fatal("waiter woken by a refused append")
	default:
	}
	r.Close()
	select {
	case <-a:
	default:
		t.Fatal("waiter not woken by close")
	}
}

func TestFollowerRefusesAndKnowsLeader(t *testing.T) {
	alive := map[int32]bool{1: true, 2: true, 3: true}
	r := openReplica(t, t.TempDir(), Config{Self: 2, Replicas: []int32{1, 2, 3}, Alive: func(id int32) bool { return alive[id] }})
	if r.IsLeader() || r.Leader() != 1 || r.LeaderEpoch() != -1 {
		t.Fatalf("follower: leader %d (is leader %v), epoch %d", r.Leader(), r.IsLeader(), r.LeaderEpoch())
	}
	if _, err := r.Append(batch(1, "x")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append on a follower: %v, want ErrNotLeader", err)
	}
	if _, err := r.DeleteRecordsBefore(context.Background(), 0); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("delete records on a follower: %v, want ErrNotLeader", err)
	}
	if isr, off := r.ISR(), r.Offline(); !slices.Equal(isr, []int32{1}) || len(off) != 0 {
		t.Fatalf("ISR %v, offline %v", isr, off)
	}
	// Single copy: the data is on the first replica only, so nobody leads
	// without it; the partition is not served, empty, by another.
	alive[1] = false
	if r.Leader() != -1 || r.IsLeader() {
		t.Fatalf("leader %d with the first replica down", r.Leader())
	}
	if isr, off := r.ISR(), r.Offline(); len(isr) != 0 || !slices.Equal(off, []int32{1}) {
		t.Fatalf("first replica down: ISR %v, offline %v", isr, off)
	}
	if st := r.State(); st.Leader != -1 || st.LeaderEpoch != -1 || len(st.ISR) != 0 || !slices.Equal(st.Offline, []int32{1}) {
		t.Fatalf("state with the first replica down: %+v", st)
	}
	alive[1], alive[3] = true, false
	if st := r.State(); st.Leader != 1 || st.LeaderEpoch != -1 || !slices.Equal(st.ISR, []int32{1}) || !slices.Equal(st.Offline, []int32{3}) {
		t.Fatalf("state with the third replica down: %+v", st)
	}
	if got := r.Replicas(); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("replicas %v", got)
	}
}

// TestLeaderEpochAcrossRestarts: each open of the leading replica is a new
// leadership with a higher epoch than any batch on disk carries; the epoch
// is stamped into the batches and survives restarts through the log's
// leader-epoch cache.
func TestLeaderEpochAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	open := func() *Replica {
		log, err := partition.Open(dir, partition.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		return New(log, Config{Self: 1, Replicas: []int32{1}})
	}
	r := open()
	if e := r.LeaderEpoch(); e != 0 {
		t.Fatalf("new log: epoch %d, want 0", e)
	}
	if _, err := r.Append(batch(1, "first")); err != nil {
		t.Fatal(err)
	}
	r.Close()

	r = open()
	if e := r.LeaderEpoch(); e != 1 {
		t.Fatalf("after a restart: epoch %d, want 1", e)
	}
	if _, err := r.Append(batch(1, "second")); err != nil {
		t.Fatal(err)
	}
	r.Close()

	// No append in epoch 2: the cache does not record it, and the next
	// open leads in epoch 2 again (no batch carries it, so no client can
	// have seen a record of it).
	r = open()
	if e := r.LeaderEpoch(); e != 2 {
		t.Fatalf("after a second restart: epoch %d, want 2", e)
	}
	r.Close()
	r = open()
	defer r.Close()
	if e := r.LeaderEpoch(); e != 2 {
		t.Fatalf("after an idle restart: epoch %d, want 2", e)
	}
	hs := headers(t, r, 0)
	if len(hs) != 2 || hs[0].PartitionLeaderEpoch != 0 || hs[1].PartitionLeaderEpoch != 1 {
		t.Fatalf("batches on disk: %+v, want epochs 0 and 1", hs)
	}
	if r.HighWatermark() != 2 {
		t.Fatalf("high watermark after restart %d, want 2", r.HighWatermark())
	}
}
