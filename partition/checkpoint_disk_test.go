package partition

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/spool-log/spool/internal/fulldisk"
)

// A truncation writes its checkpoints (recovery point, leader epochs)
// before it cuts: on a full disk, where they cannot be saved, it must fail
// and cut nothing, rather than cut and leave checkpoints that vouch for the
// bytes it removed.
func TestTruncateToOnFullDiskCutsNothing(t *testing.T) {
	mnt := fulldisk.Mount(t, 1<<20)
	dir := filepath.Join(mnt, "p-0")
	cfg := testConfig()
	l := openLog(t, dir, cfg)
	defer func() { l.Close() }()
	var batches [][]byte
	for i := 0; i < 10; i++ { // offsets 0-14 by epoch 1, 15-29 by epoch 2
		b := sizedBatch(int64(i), 3, 100)
		mustAppend(t, l, b, int32(1+i/5))
		batches = append(batches, b)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}

	disk := fulldisk.Fill(t, mnt)
	if err := l.TruncateTo(15); err == nil {
		t.Fatal("truncation on a full disk succeeded: its checkpoints cannot have been saved")
	}
	if end := l.EndOffset(); end != 30 {
		t.Fatalf("a truncation that failed cut the log to %d", end)
	}
	if got := l.LeaderEpochs(); len(got) != 2 {
		t.Fatalf("a truncation that failed changed the epochs to %v", got)
	}
	disk.Free(t)

	if err := l.TruncateTo(15); err != nil {
		t.Fatal(err)
	}
	// Epoch 1 writes again where epoch 2's batches were.
	for i := 0; i < 3; i++ {
		b := sizedBatch(int64(20+i), 3, 100)
		mustAppend(t, l, b, 1)
		batches = append(batches[:5+i], b)
	}
	// A crash: the next Open trusts only what the checkpoints vouch for
	// and walks the rest against the epochs; every batch must survive.
	l2 := openLog(t, dir, cfg)
	defer l2.Close()
	if end := l2.EndOffset(); end != 24 {
		t.Fatalf("after the crash the log ends at %d, want 24", end)
	}
	s, err := l2.Read(0, 1<<20, 24)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if got, want := readAll(t, s), bytes.Join(batches, nil); !bytes.Equal(got, want) {
		t.Fatalf("after the crash the log holds %d bytes, want the %d acknowledged", len(got), len(want))
	}
}
