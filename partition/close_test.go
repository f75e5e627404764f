package partition

import (
	"os"
	"path/filepath"
	"testing"
)

// recoveryPointIdentity is the checkpoint file as the file system knows it:
// writeFileAtomic replaces it with a new file, so an unchanged identity
// means Close did not rewrite it.
func recoveryPointIdentity(t *testing.T, dir string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, recoveryPointFile))
	if err != nil {
		t.Fatalf("stat checkpoint: %v", err)
	}
	return fi
}

// TestCloseUnchangedLogLeavesCheckpoint: a log reopened from a clean close
// and closed again without a change does not rewrite its checkpoint, which
// still vouches for the log (the next Open trusts it); a change after such
// an Open rewrites it with the new end.
func TestCloseUnchangedLogLeavesCheckpoint(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	l := openLog(t, dir, cfg)
	mustAppend(t, l, makeBatch(1, []byte("a"), []byte("b")), 0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	first := recoveryPointIdentity(t, dir)
	if rp := readRecoveryPoint(dir); rp.CleanBase != 0 || rp.Offset != 2 {
		t.Fatalf("after the first close the checkpoint is %+v, want clean at offset 2", rp)
	}

	l = openLog(t, dir, cfg)
	if !l.unchangedSinceCleanOpen() {
		t.Fatal("a log just opened from a clean close counts as changed")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if again := recoveryPointIdentity(t, dir); !os.SameFile(first, again) {
		t.Fatal("closing an unchanged log rewrote its checkpoint")
	}

	l = openLog(t, dir, cfg)
	if !l.unchangedSinceCleanOpen() {
		t.Fatal("the checkpoint left by the unchanged close is no longer trusted as clean")
	}
	if got := l.EndOffset(); got != 2 {
		t.Fatalf("end offset %d after reopening, want 2", got)
	}
	mustAppend(t, l, makeBatch(2, []byte("c")), 0)
	if l.unchangedSinceCleanOpen() {
		t.Fatal("a log with an append counts as unchanged")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if rp := readRecoveryPoint(dir); rp.CleanBase != 0 || rp.Offset != 3 || rp.CleanSize != fileSize(t, filepath.Join(dir, "00000000000000000000.log")) {
		t.Fatalf("after closing a changed log the checkpoint is %+v, want clean at offset 3 with the segment's size", rp)
	}
}

// TestCloseAfterRetentionRewritesCheckpoint: deleting closed segments is a
// change the clean checkpoint does not show, so Close does its full work.
func TestCloseAfterRetentionRewritesCheckpoint(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 600
	l := openLog(t, dir, cfg)
	for i := 0; i < 6; i++ {
		mustAppend(t, l, sizedBatch(int64(i), 2, 100), 0)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.RetentionBytes = 600
	l = openLog(t, dir, cfg)
	if n, err := l.EnforceRetention(); err != nil || n == 0 {
		t.Fatalf("retention deleted %d segments (err %v), want some", n, err)
	}
	if l.unchangedSinceCleanOpen() {
		t.Fatal("a log whose segments retention deleted counts as unchanged")
	}
	before := recoveryPointIdentity(t, dir)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if after := recoveryPointIdentity(t, dir); os.SameFile(before, after) {
		t.Fatal("Close after retention did not rewrite the checkpoint")
	}
}
