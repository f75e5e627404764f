package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// syncCounter is a replLog's syncFile that counts its calls and records the
// size of the file each one made durable.
type syncCounter struct {
	calls  atomic.Int64
	synced atomic.Int64 // bytes of the file durable
}

func (s *syncCounter) hook(l *replLog) {
	l.syncFile = func(f *os.File) error {
		st, err := f.Stat()
		if err != nil {
			return err
		}
		if err := fdatasync(f); err != nil {
			return err
		}
		s.calls.Add(1)
		s.synced.Store(st.Size())
		return nil
	}
}

func testReplLog(t *testing.T, fsync bool) (*replLog, *syncCounter) {
	t.Helper()
	l, err := newReplLog(t.TempDir(), 1<<30, fsync)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.close() })
	sc := &syncCounter{}
	sc.hook(l)
	return l, sc
}

// startFollower serves a follower on loopback; stop closes it and every
// connection it took.
func startFollower(t *testing.T, fsync bool) (addr string, log *replLog, sc *syncCounter, stop func()) {
	t.Helper()
	log, sc = testReplLog(t, fsync)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := serveConns(ln, func(c net.Conn) error { return serveFollower(c, log) })
	var once sync.Once
	stop = func() {
		once.Do(func() {
			if err := srv.close(); err != nil {
				t.Errorf("follower: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return ln.Addr().String(), log, sc, stop
}

func readFile(t *testing.T, l *replLog) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(l.dir, "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func frame(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// A follower writes each frame and answers with the count it holds, after
// an fdatasync covering them with fsync, and with none without.
func TestFollowerAnswers(t *testing.T) {
	for _, fsync := range []bool{false, true} {
		addr, log, sc, _ := startFollower(t, fsync)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		var want []byte
		for i := 1; i <= 20; i++ {
			rec := bytes.Repeat([]byte{byte(i)}, 100+i)
			want = append(want, rec...)
			// Three frames in one write: one answer may cover them all.
			if _, err := c.Write(append(append(frame(rec), frame(rec)...), frame(rec)...)); err != nil {
				t.Fatal(err)
			}
			want = append(want, rec...)
			want = append(want, rec...)
			var ack [8]byte
			for got := uint64(0); got < uint64(3*i); {
				if _, err := io.ReadFull(c, ack[:]); err != nil {
					t.Fatalf("fsync %v: ack of frame %d: %v", fsync, 3*i, err)
				}
				got = binary.BigEndian.Uint64(ack[:])
				if got > uint64(3*i) {
					t.Fatalf("fsync %v: acked %d frames of %d sent", fsync, got, 3*i)
				}
				if fsync && sc.synced.Load() < int64(len(want))-int64(3*(100+i))+int64(got-uint64(3*(i-1)))*int64(100+i) {
					t.Fatalf("fsync %v: acked %d frames with %d bytes synced", fsync, got, sc.synced.Load())
				}
			}
		}
		if got := readFile(t, log); !bytes.Equal(got, want) {
			t.Fatalf("fsync %v: follower's file holds %d bytes, want the %d sent", fsync, len(got), len(want))
		}
		if calls := sc.calls.Load(); fsync && (calls < 1 || calls > 60) || !fsync && calls != 0 {
			t.Fatalf("fsync %v: %d fdatasyncs for 60 frames in 20 writes", fsync, calls)
		}
	}
}

// heldFollower accepts the leader and answers only what the test says.
type heldFollower struct {
	ln   net.Listener
	conn chan net.Conn
}

func newHeldFollower(t *testing.T) *heldFollower {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &heldFollower{ln: ln, conn: make(chan net.Conn, 1)}
	go func() {
		c, err := ln.Accept()
		if err == nil {
			go io.Copy(io.Discard, c) // takes the frames, answers nothing
			h.conn <- c
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return h
}

func (h *heldFollower) ack(t *testing.T, n uint64) {
	t.Helper()
	c := <-h.conn
	h.conn <- c
	if _, err := c.Write(binary.BigEndian.AppendUint64(nil, n)); err != nil {
		t.Fatal(err)
	}
}

// The leader answers once one of its two followers holds the batch, and
// not before.
func TestReplLeaderAnswersAfterOneOfTwo(t *testing.T) {
	a, b := newHeldFollower(t), newHeldFollower(t)
	log, _ := testReplLog(t, false)
	leader, err := newReplLeader(log, []string{a.ln.Addr().String(), b.ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	defer leader.close()
	done := make(chan error, 1)
	go func() { done <- leader.append([]byte("batch one")) }()
	select {
	case err := <-done:
		t.Fatalf("answered (%v) with neither follower holding the batch", err)
	case <-time.After(100 * time.Millisecond):
	}
	b.ack(t, 1)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer 10s after a follower acknowledged")
	}
	if got := readFile(t, log); string(got) != "batch one" {
		t.Fatalf("leader's file holds %q", got)
	}
}

// With one follower down the leader answers with the other; with both
// down it fails rather than hang.
func TestReplLeaderFollowerDown(t *testing.T) {
	addr1, log1, _, stop1 := startFollower(t, false)
	addr2, log2, _, stop2 := startFollower(t, false)
	log, _ := testReplLog(t, false)
	leader, err := newReplLeader(log, []string{addr1, addr2})
	if err != nil {
		t.Fatal(err)
	}
	defer leader.close()
	appendOK := func(b string) {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- leader.append([]byte(b)) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("append %q: %v", b, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("append %q: no answer in 10s", b)
		}
	}
	appendOK("one,")
	stop1()
	for i := 0; i < 50; i++ {
		appendOK("two,")
	}
	if got := readFile(t, log2); !bytes.Equal(got, readFile(t, log)) {
		t.Fatalf("the live follower holds %q, the leader %q", got, readFile(t, log))
	}
	if got := readFile(t, log1); !bytes.HasPrefix(readFile(t, log), got) {
		t.Fatalf("the stopped follower holds %q, not a prefix of the leader's", got)
	}
	stop2()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := leader.append([]byte("three")); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("appends still answered 10s after both followers stopped")
		}
	}
}

// With fsync every answer comes after the leader's fdatasync covering its
// batch (one writer, so its k-th batch ends the file's k-th kilobyte), and
// concurrent appends share syncs; without, no sync is made anywhere.
func TestReplLeaderFsyncPolicy(t *testing.T) {
	for _, fsync := range []bool{false, true} {
		addr1, _, fsc1, _ := startFollower(t, fsync)
		addr2, _, fsc2, _ := startFollower(t, fsync)
		log, sc := testReplLog(t, fsync)
		leader, err := newReplLeader(log, []string{addr1, addr2})
		if err != nil {
			t.Fatal(err)
		}
		const size = 1000
		b := bytes.Repeat([]byte{'x'}, size)
		for k := int64(1); k <= 50; k++ {
			if err := leader.append(b); err != nil {
				t.Fatal(err)
			}
			if fsync && sc.synced.Load() < k*size {
				t.Fatalf("fsync: batch %d answered with %d bytes synced", k, sc.synced.Load())
			}
		}
		const writers, each = 8, 50
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					if err := leader.append(b); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		leader.close()
		calls, fcalls := sc.calls.Load(), fsc1.calls.Load()+fsc2.calls.Load()
		const total = 50 + writers*each
		switch {
		case !fsync && (calls != 0 || fcalls != 0):
			t.Fatalf("without fsync: %d leader and %d follower syncs", calls, fcalls)
		case fsync && (calls < 50 || calls > total):
			t.Fatalf("fsync: %d leader syncs for %d appends, 50 of them one at a time", calls, total)
		case fsync && fcalls < 50:
			t.Fatalf("fsync: %d follower syncs for 50 appends one at a time", fcalls)
		case fsync && sc.synced.Load() != total*size:
			t.Fatalf("fsync: %d bytes synced of %d", sc.synced.Load(), total*size)
		}
		t.Logf("fsync %v: %d appends, %d leader syncs, %d and %d follower syncs", fsync, total, calls, fsc1.calls.Load(), fsc2.calls.Load())
	}
}

// The replicated baseline runs its three processes, answers whole batches,
// costs more than the append baseline it contains (measured alongside, in
// the same run), and leaves nothing behind.
func TestBaselineReplicated(t *testing.T) {
	for _, fsync := range []bool{false, true} {
		cfg := testBaseline(t, 300*time.Millisecond)
		cfg.RecordSize, cfg.BatchRecords, cfg.Producers, cfg.Fsync = 100, 10, 2, fsync
		cfg.Only = []string{"append", "replicated", "replicated-rtt"}
		rep, err := Baseline(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		app, rep3, rtt := resultNamed(t, rep, "append"), resultNamed(t, rep, "replicated"), resultNamed(t, rep, "replicated-rtt")
		if rep3.Records <= 0 || rep3.Bytes != rep3.Records*100 || rep3.Latency == nil || rep3.Latency.Samples != rep3.Records/10 {
			t.Fatalf("fsync %v: replicated %+v: want whole batches of 10 records of 100 bytes, one round trip each", fsync, rep3)
		}
		if rep3.Extra["server_cpu_seconds_per_gb"] < rep3.Extra["leader_cpu_seconds_per_gb"] || rep3.Extra["records_per_batch"] != 10 {
			t.Fatalf("fsync %v: replicated extra %v: want the three servers' CPU per GB above the leader's", fsync, rep3.Extra)
		}
		if rtt.Latency == nil || rtt.Latency.Samples != rtt.Records || rtt.Latency.What != "replicated round trip" || rtt.Extra["records_per_batch"] != 1 {
			t.Fatalf("fsync %v: replicated-rtt %+v", fsync, rtt)
		}
		// Three writes and two more round trips per batch: on any machine
		// slower than one write and one round trip. 1.2 leaves room for
		// a noisy neighbour's spell falling on the append run.
		if rep3.RecordsPerSec > 1.2*app.RecordsPerSec {
			t.Fatalf("fsync %v: replicated %.0f records/s, faster than append's %.0f", fsync, rep3.RecordsPerSec, app.RecordsPerSec)
		}
		t.Logf("fsync %v: append %.0f rec/s, replicated %.0f rec/s (%.2f×), replicated-rtt p50 %.3f ms p99 %.3f ms", fsync,
			app.RecordsPerSec, rep3.RecordsPerSec, rep3.RecordsPerSec/app.RecordsPerSec, rtt.Latency.P50, rtt.Latency.P99)
		if ents, err := os.ReadDir(cfg.Dir); err != nil || len(ents) != 0 {
			t.Fatalf("baseline left %v in its dir (%v)", ents, err)
		}
	}
}

// A log rolls past its roll size: the old file is synced (with fsync) and
// deleted, the new one takes the batch, and a sync that raced the roll, of
// the file it closed, is no error, as the roll synced it.
func TestReplLogRolls(t *testing.T) {
	l, sc := testReplLog(t, true)
	l.roll = 100
	old := l.f
	for i := 0; i < 3; i++ {
		if err := l.write(bytes.Repeat([]byte{byte('a' + i)}, 60)); err != nil {
			t.Fatal(err)
		}
	}
	if l.rolls != 2 || sc.calls.Load() != 2 {
		t.Fatalf("3 writes of 60 bytes, roll 100: %d rolls, %d syncs; want 2 and 2", l.rolls, sc.calls.Load())
	}
	ents, err := os.ReadDir(l.dir)
	if err != nil || len(ents) != 1 || ents[0].Name() != "00000000000000000002.log" {
		t.Fatalf("after two rolls the dir holds %v (%v), want only the third file", ents, err)
	}
	if err := l.syncFile(old); err == nil {
		t.Fatal("syncing the closed first file succeeded")
	}
	cur := l.f
	l.f = old // as a sync that took the file before the roll sees it
	err = l.sync()
	l.f = cur
	if err != nil {
		t.Fatalf("a sync of the file a roll closed: %v", err)
	}
}
