package partition

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// DeleteRecordsBefore moves the start durably: reads below it are out of
// range, before and after a reopen, and retention deletes the closed
// segments wholly below it, never the one holding the new start.
func TestDeleteRecordsBefore(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 600
	cfg.RetentionAge, cfg.RetentionBytes = -1, -1 // only the log start deletes
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	for range 7 { // segments of two 2-record batches: [0,4) [4,8) [8,12) [12,14)
		mustAppend(t, l, sizedBatch(1000, 2, 90), 0)
	}
	if l.SegmentCount() != 4 {
		t.Fatalf("%d segments, want 4", l.SegmentCount())
	}
	if _, err := l.DeleteRecordsBefore(15); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("delete past the end: %v, want ErrOffsetOutOfRange", err)
	}
	start, err := l.DeleteRecordsBefore(9)
	if err != nil || start != 9 || l.StartOffset() != 9 {
		t.Fatalf("delete before 9: start %d (StartOffset %d), %v", start, l.StartOffset(), err)
	}
	if start, err := l.DeleteRecordsBefore(3); err != nil || start != 9 {
		t.Fatalf("delete before 3 after 9: start %d, %v; want 9, nothing moved back", start, err)
	}
	if _, err := l.Read(8, 1<<20, l.EndOffset()); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read at 8 below start 9: %v", err)
	}
	s, err := l.Read(9, 1<<20, l.EndOffset())
	if err != nil {
		t.Fatalf("read at 9: %v", err)
	}
	if hs := batchesIn(t, readAll(t, s)); len(hs) == 0 || hs[0].BaseOffset != 8 || hs[0].LastOffset() < 9 {
		t.Fatalf("read at 9 starts with %+v, want the batch holding 9", hs)
	}
	s.Release()

	n, err := l.EnforceRetention()
	if err != nil || n != 2 {
		t.Fatalf("retention deleted %d, %v; want the 2 segments below offset 8", n, err)
	}
	for _, base := range []int64{0, 4} {
		if _, err := os.Stat(segmentName(dir, base, logSuffix)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("segment %d wholly below the start still there: %v", base, err)
		}
	}
	if _, err := os.Stat(segmentName(dir, 8, logSuffix)); err != nil {
		t.Errorf("segment 8 holds the start and must stay: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = openLog(t, dir, cfg)
	defer l.Close()
	if l.StartOffset() != 9 || l.EndOffset() != 14 {
		t.Fatalf("after reopen start %d end %d, want 9 and 14", l.StartOffset(), l.EndOffset())
	}
	if _, err := l.Read(8, 1<<20, l.EndOffset()); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("after reopen, read at 8: %v", err)
	}
}

// A start checkpoint the process did not write is refused, not ignored: an
// ignored one would serve deleted records again.
func TestDeleteRecordsCheckpointDamaged(t *testing.T) {
	cfg := testConfig()
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	mustAppend(t, l, sizedBatch(1000, 2, 90), 0)
	if _, err := l.DeleteRecordsBefore(1); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if err := os.WriteFile(filepath.Join(dir, logStartOffsetFile), []byte("0\nx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if l, err := Open(dir, cfg); err == nil {
		l.Close()
		t.Fatal("opened a log with a damaged log start checkpoint")
	}
}

// Truncating below the start (a diverged replica) brings the start down to
// the new end, so the log never starts past its end.
func TestDeleteRecordsThenTruncate(t *testing.T) {
	cfg := testConfig()
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	for range 3 {
		mustAppend(t, l, sizedBatch(1000, 2, 90), 0)
	}
	if _, err := l.DeleteRecordsBefore(5); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(2); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 2 || l.EndOffset() != 2 {
		t.Fatalf("start %d end %d after truncate to 2, want 2 and 2", l.StartOffset(), l.EndOffset())
	}
	l.Close()
	l = openLog(t, dir, cfg)
	defer l.Close()
	if l.StartOffset() != 2 {
		t.Fatalf("after reopen start %d, want 2", l.StartOffset())
	}
}

// A start past what recovery kept (the tail it was moved in was cut) comes
// down to the recovered end on disk too, so the records appended after the
// recovery are not hidden below the old start at the next open.
func TestLogStartClampedByRecoveryStaysClamped(t *testing.T) {
	cfg := testConfig()
	dir := filepath.Join(t.TempDir(), "orders-0")
	l := openLog(t, dir, cfg)
	for range 3 { // offsets 0-5
		mustAppend(t, l, sizedBatch(1000, 2, 90), 0)
	}
	if _, err := l.DeleteRecordsBefore(6); err != nil {
		t.Fatal(err)
	}
	l.Close()
	seg := filepath.Base(segmentName(dir, 0, logSuffix))
	restoreDir(t, dir, snapshotDir(t, dir), func(n string, b []byte) []byte {
		switch n {
		case seg:
			b[len(b)-5] ^= 1 // the last batch, 4-5, is damaged
		case recoveryPointFile:
			return []byte("0\n0\n-1 -1\n") // as if never flushed
		}
		return b
	})
	l = openLog(t, dir, cfg)
	if l.StartOffset() != 4 || l.EndOffset() != 4 {
		t.Fatalf("after recovery start %d end %d, want 4 and 4", l.StartOffset(), l.EndOffset())
	}
	// A start checkpoint that cannot be rewritten is rewritten by the
	// next append, before its batch, or the append fails.
	l.logStartStale = true
	unblock := blockStateFile(t, dir, logStartOffsetFile)
	if _, err := l.Append(sizedBatch(2000, 2, 90), 0); err == nil {
		t.Fatal("appended while the checkpoint on disk would hide the batch")
	}
	unblock()
	for range 2 { // offsets 4-7, acknowledged
		mustAppend(t, l, sizedBatch(2000, 2, 90), 0)
	}
	l.Close()
	l = openLog(t, dir, cfg)
	defer l.Close()
	if l.StartOffset() != 4 || l.EndOffset() != 8 {
		t.Fatalf("after reopen start %d end %d, want 4 and 8: records appended after the recovery hidden", l.StartOffset(), l.EndOffset())
	}
}

// TruncateTo below the start lowers the start checkpoint before it cuts: if
// it cannot, nothing is cut (the records appended after a cut would
// otherwise hide below the old start at the next open).
func TestTruncateBelowStartCheckpointFirst(t *testing.T) {
	cfg := testConfig()
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	defer l.Close()
	for range 3 {
		mustAppend(t, l, sizedBatch(1000, 2, 90), 0)
	}
	if _, err := l.DeleteRecordsBefore(5); err != nil {
		t.Fatal(err)
	}
	unblock := blockStateFile(t, dir, logStartOffsetFile)
	if err := l.TruncateTo(2); err == nil {
		t.Fatal("truncated below the start with its checkpoint unwritable")
	}
	if l.StartOffset() != 5 || l.EndOffset() != 6 {
		t.Fatalf("after a failed truncate start %d end %d, want 5 and 6 (nothing cut)", l.StartOffset(), l.EndOffset())
	}
	unblock()
	if err := l.TruncateTo(2); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 2 || l.EndOffset() != 2 {
		t.Fatalf("start %d end %d after truncate to 2, want 2 and 2", l.StartOffset(), l.EndOffset())
	}
}

// Scrub leaves alone the segments wholly below the log start: their records
// are deleted, no read reaches them, and damage there is no finding (no
// ERROR, no corrupt-batch count) while retention has yet to remove them.
func TestScrubSkipsSegmentsBelowLogStart(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 600
	cfg.RetentionAge, cfg.RetentionBytes = -1, -1
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	defer l.Close()
	for range 7 { // segments [0,4) [4,8) [8,12) [12,14)
		mustAppend(t, l, sizedBatch(1000, 2, 90), 0)
	}
	if _, err := l.DeleteRecordsBefore(9); err != nil {
		t.Fatal(err)
	}
	seg := segmentName(dir, 0, logSuffix)
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-5] ^= 1 // a flipped payload byte in a deleted batch
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := l.Scrub(func(int64) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Corrupt) != 0 || res.Segments != 1 {
		t.Fatalf("scrub: %d segments, findings %v; want segment 8 only and nothing found", res.Segments, res.Corrupt)
	}
}

// blockStateFile makes every rewrite of dir/name fail until the returned
// func is called: the name becomes a non-empty directory, which no rename
// can replace. The old contents come back when unblocked.
func blockStateFile(t *testing.T, dir, name string) (unblock func()) {
	t.Helper()
	path := filepath.Join(dir, name)
	old, err := os.ReadFile(path)
	existed := err == nil
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(path, "blocker"), 0o755); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := os.RemoveAll(path); err != nil {
			t.Fatal(err)
		}
		if existed {
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
