package partition

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
)

// Scrub runs beside appends, reads and retention (run with -race): a
// segment retention deletes mid-scrub is skipped, a damaged batch in a
// segment still in the log is found and refused by Read, and a pace error
// stops the scrub.
func TestScrubBesideAppendsReadsAndRetention(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 2000
	cfg.RetentionAge = -1
	cfg.RetentionBytes = 12000
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	defer l.Close()
	for i := 0; i < 60; i++ {
		mustAppend(t, l, sizedBatch(int64(i), 2, 60), -1)
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // appends, rolling segments
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			if _, err := l.Append(sizedBatch(int64(i), 2, 60), -1); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() { // retention deletes the oldest segments
		defer wg.Done()
		for !stop.Load() {
			if _, err := l.EnforceRetention(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() { // reads from the start
		defer wg.Done()
		for !stop.Load() {
			s, err := l.Read(l.StartOffset(), 1<<16, l.EndOffset())
			if err != nil && !errors.Is(err, ErrOffsetOutOfRange) {
				t.Error(err)
				return
			}
			s.Release()
		}
	}()
	for i := 0; i < 20; i++ {
		res, err := l.Scrub(func(int64) error { return nil })
		if err != nil || len(res.Corrupt) != 0 {
			t.Fatalf("scrub of a sound log: %+v, %v", res, err)
		}
	}
	stop.Store(true)
	wg.Wait()

	// Damage the newest sealed segment's first batch, then scrub.
	l.mu.RLock()
	s := l.segs[len(l.segs)-2]
	l.mu.RUnlock()
	f, err := os.OpenFile(s.log.path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], 100); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 1
	if _, err := f.WriteAt(b[:], 100); err != nil {
		t.Fatal(err)
	}
	f.Close()
	res, err := l.Scrub(func(int64) error { return nil })
	if err != nil || len(res.Corrupt) != 1 || res.Corrupt[0].Segment != s.log.path || res.Corrupt[0].Position != 0 || res.Corrupt[0].Offset != s.base {
		t.Fatalf("scrub: %+v, %v; want the first batch of %s", res, err, s.log.path)
	}
	if _, err := l.Read(s.base, 1<<20, l.EndOffset()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read of the damaged batch: %v, want ErrCorrupt", err)
	}
	stopped := errors.New("stopped")
	if _, err := l.Scrub(func(int64) error { return stopped }); !errors.Is(err, stopped) {
		t.Fatalf("scrub with a failing pace: %v", err)
	}
}

// BenchmarkScrub measures an unpaced scrub of 64 MiB of sealed segments
// (16 KiB batches of 1 KiB records, cached): the ceiling for --scrub-rate.
//
//	go test -run='^$' -bench=BenchmarkScrub ./partition/
func BenchmarkScrub(b *testing.B) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 8 << 20
	l := openLog(b, b.TempDir(), cfg)
	defer l.Close()
	batch := sizedBatch(0, 15, 1024)
	for l.Size() < 64<<20+int64(len(batch)) {
		mustAppend(b, l, batch, -1)
	}
	b.ResetTimer()
	var bytes int64
	for i := 0; i < b.N; i++ {
		res, err := l.Scrub(func(int64) error { return nil })
		if err != nil || len(res.Corrupt) > 0 {
			b.Fatal(res, err)
		}
		bytes += res.Bytes
	}
	b.ReportMetric(float64(bytes)/b.Elapsed().Seconds()/1e6, "MB/s")
}
