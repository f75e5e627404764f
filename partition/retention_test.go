package partition

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

func TestRetentionByAge(t *testing.T) {
	clock := &fakeClock{now: time.UnixMilli(10_000_000)}
	cfg := testConfig()
	cfg.SegmentBytes = 600
	cfg.RetentionAge = time.Hour
	cfg.Clock = clock.Now
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	defer l.Close()
	hourMs := time.Hour.Milliseconds()
	// Segments of two batches: timestamps t-3h, t-3h | t-2h, t-30m | t-2h, t | t (active)
	now := clock.now.UnixMilli()
	for _, ts := range []int64{now - 3*hourMs, now - 3*hourMs, now - 2*hourMs, now - 30*60_000, now - 2*hourMs, now, now} {
		mustAppend(t, l, sizedBatch(ts, 2, 90), 5)
	}
	if l.SegmentCount() != 4 {
		t.Fatalf("%d segments", l.SegmentCount())
	}
	n, err := l.EnforceRetention()
	if err != nil || n != 1 {
		t.Fatalf("deleted %d, %v; want 1 (only the first is wholly older than an hour)", n, err)
	}
	if l.StartOffset() != 4 {
		t.Fatalf("start %d", l.StartOffset())
	}
	if _, err := l.Read(0, 100, l.EndOffset()); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	if _, err := os.Stat(segmentName(dir, 0, logSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("segment 0 not deleted: %v", err)
	}
	if e := l.LeaderEpochs(); len(e) != 1 || e[0] != (EpochEntry{5, 4}) {
		t.Fatalf("epochs %v", e)
	}
	// Retention stops at the first segment that must stay, even if later
	// ones are older.
	clock.Advance(31 * time.Minute) // segment 4 now has newest t-61m... but its newest is t-30m+31m
	if n, _ := l.EnforceRetention(); n != 1 {
		t.Fatalf("deleted %d after 31m, want 1", n)
	}
	clock.Advance(100 * time.Hour)
	if n, _ := l.EnforceRetention(); n != 1 || l.SegmentCount() != 1 {
		t.Fatalf("deleted %d, %d segments left; the active segment must stay", n, l.SegmentCount())
	}
	if l.StartOffset() != 12 || l.EndOffset() != 14 {
		t.Fatalf("start %d end %d", l.StartOffset(), l.EndOffset())
	}
	l.Close()
	l = openLog(t, dir, cfg)
	if l.StartOffset() != 12 || l.EndOffset() != 14 {
		t.Fatalf("after reopen: start %d end %d", l.StartOffset(), l.EndOffset())
	}
	// Negative age keeps everything.
	cfg.RetentionAge = -1
	l.SetConfig(cfg)
	mustAppend(t, l, sizedBatch(0, 2, 400), 5) // rolls
	clock.Advance(1000 * time.Hour)
	if n, _ := l.EnforceRetention(); n != 0 {
		t.Fatalf("deleted %d with retention forever", n)
	}
}

func TestRetentionByBytes(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 600
	cfg.RetentionAge = -1
	cfg.RetentionBytes = 1200
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	for i := 0; i < 10; i++ {
		mustAppend(t, l, sizedBatch(time.Now().UnixMilli(), 2, 90), -1) // 2 per segment
	}
	size, segs := l.Size(), l.SegmentCount()
	segSize := size / int64(segs) // all but the last are full and equal here
	n, err := l.EnforceRetention()
	if err != nil {
		t.Fatal(err)
	}
	// Delete the oldest while what remains is still >= RetentionBytes.
	want := 0
	for rest := size; want < segs-1 && rest-segSize >= cfg.RetentionBytes; rest -= segSize {
		want++
	}
	if n != want || want == 0 {
		t.Fatalf("deleted %d segments of %d (size %d), want %d", n, segs, size, want)
	}
	if l.Size() < cfg.RetentionBytes {
		t.Fatalf("size %d fell below retention.bytes", l.Size())
	}
	cfg.RetentionBytes = 0
	l.SetConfig(cfg)
	l.EnforceRetention()
	if l.SegmentCount() != 1 {
		t.Fatalf("%d segments; all closed ones should go at retention.bytes 0", l.SegmentCount())
	}
}

// A region handed out stays readable while retention deletes its segment,
// and its descriptor is closed at Release.
func TestSliceSurvivesRetentionAndIdleClose(t *testing.T) {
	files := NewFileCache(2)
	cfg := testConfig()
	cfg.SegmentBytes = 600
	cfg.RetentionAge = -1
	cfg.RetentionBytes = 0
	cfg.Files = files
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	defer l.Close()
	for i := 0; i < 6; i++ {
		mustAppend(t, l, sizedBatch(int64(i), 2, 90), -1)
	}
	s, err := l.Read(0, 1<<20, l.EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	before := readAll(t, s)
	if n, err := l.EnforceRetention(); err != nil || n != 2 {
		t.Fatalf("retention deleted %d, %v", n, err)
	}
	if _, err := os.Stat(segmentName(dir, 0, logSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("segment file still linked")
	}
	// Other logs churn the cache well past its bound meanwhile.
	for i := 0; i < 5; i++ {
		other := openLog(t, filepath.Join(t.TempDir(), "o"), Config{Files: files, RetentionAge: -1, RetentionBytes: -1})
		mustAppend(t, other, makeBatch(1, []byte("x")), -1)
		other.Close()
	}
	if after := readAll(t, s); string(after) != string(before) {
		t.Fatal("pinned regions changed under retention")
	}
	pinned := files.OpenFiles()
	s.Release()
	if files.OpenFiles() >= pinned {
		t.Fatalf("release did not close the deleted segments' files: %d open, was %d", files.OpenFiles(), pinned)
	}
	if files.OpenFiles() > 2 {
		t.Fatalf("%d files open, bound is 2", files.OpenFiles())
	}
}

func TestFileCacheBoundsManyLogs(t *testing.T) {
	files := NewFileCache(8)
	cfg := DefaultConfig()
	cfg.Files = files
	root := t.TempDir()
	var logs []*Log
	for i := 0; i < 40; i++ {
		l := openLog(t, filepath.Join(root, "t-"+string(rune('a'+i%26))+string(rune('a'+i/26))), cfg)
		mustAppend(t, l, makeBatch(1, []byte("v")), -1)
		logs = append(logs, l)
		if files.OpenFiles() > 8 {
			t.Fatalf("%d files open after %d logs", files.OpenFiles(), i+1)
		}
	}
	for _, l := range logs {
		s, err := l.Read(0, 100, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(readAll(t, s)) == 0 {
			t.Fatal("empty read")
		}
		s.Release()
		if files.OpenFiles() > 8 {
			t.Fatalf("%d files open", files.OpenFiles())
		}
	}
	for _, l := range logs {
		l.Close()
	}
	if files.OpenFiles() != 0 {
		t.Fatalf("%d files open after every log closed", files.OpenFiles())
	}
}

func TestFlushPolicies(t *testing.T) {
	t.Run("interval", func(t *testing.T) {
		cfg := testConfig()
		cfg.Flush = FlushInterval
		cfg.FlushEvery = 10 * time.Millisecond
		dir := t.TempDir()
		l := openLog(t, dir, cfg)
		defer l.Close()
		mustAppend(t, l, makeBatch(1, []byte("a"), []byte("b")), -1)
		retry.Run(t, 10*time.Second, func() error {
			return retry.Check(readRecoveryPoint(dir).Offset == 2, "recovery point %d, want 2", readRecoveryPoint(dir).Offset)
		})
	})
	t.Run("every append", func(t *testing.T) {
		cfg := testConfig()
		cfg.Flush = FlushEveryAppend
		dir := t.TempDir()
		l := openLog(t, dir, cfg)
		defer l.Close()
		mustAppend(t, l, makeBatch(1, []byte("a")), -1)
		// The recovery point moves on Flush; the data was synced already.
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		if rp := readRecoveryPoint(dir); rp.Offset != 1 || rp.CleanBase != -1 {
			t.Fatalf("recovery point %+v", rp)
		}
	})
	t.Run("clean close", func(t *testing.T) {
		dir := t.TempDir()
		l := openLog(t, dir, testConfig())
		mustAppend(t, l, makeBatch(1, []byte("a")), -1)
		l.Close()
		if rp := readRecoveryPoint(dir); rp.Offset != 1 || rp.CleanBase != 0 {
			t.Fatalf("recovery point after close %+v", rp)
		}
		l = openLog(t, dir, testConfig())
		defer l.Close()
		mustAppend(t, l, makeBatch(1, []byte("b")), -1)
		if rp := readRecoveryPoint(dir); rp.CleanBase != -1 {
			t.Fatalf("clean mark survived an append: %+v", rp)
		}
	})
}
