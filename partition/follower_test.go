package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// A replicated append stores the leader's bytes: only the base offset and
// epoch are stamped, even where Append would stamp LogAppendTime.
func TestAppendAtKeepsTheLeadersBytes(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.LogAppendTime = true
	l := openLog(t, dir, cfg)
	defer l.Close()
	b := append(makeBatch(1000, []byte("a"), []byte("b")), makeBatch(2000, []byte("c"))...)
	want := bytes.Clone(b)
	binary.BigEndian.PutUint64(want[offBaseOffset:], 0)
	binary.BigEndian.PutUint32(want[offLeaderEpoch:], 3)
	second := want[len(makeBatch(1000, []byte("a"), []byte("b"))):]
	binary.BigEndian.PutUint64(second[offBaseOffset:], 2)
	binary.BigEndian.PutUint32(second[offLeaderEpoch:], 3)

	if _, err := l.AppendAt(bytes.Clone(b), 1, 3); !errors.Is(err, ErrOffsetMismatch) {
		t.Fatalf("append at 1 of an empty log: %v", err)
	}
	info, err := l.AppendAt(b, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if info.BaseOffset != 0 || info.LastOffset != 2 || info.LogAppendTime != -1 {
		t.Fatalf("append info %+v", info)
	}
	s, err := l.Read(0, math.MaxInt32, l.EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, s)
	s.Release()
	if !bytes.Equal(got, want) {
		t.Fatal("stored bytes differ from the leader's, beyond offset and epoch")
	}
	if _, err := l.AppendAt(makeBatch(3000, []byte("d")), 3, 2); !errors.Is(err, ErrStaleLeaderEpoch) {
		t.Fatalf("append of epoch 2 after 3: %v", err)
	}
	if got := l.LeaderEpochs(); !equalEpochs(got, []EpochEntry{{Epoch: 3, StartOffset: 0}}) {
		t.Fatalf("epochs %v", got)
	}
}

// RestartAt empties the log and starts it at an offset past its end; the
// restart survives a reopen, and appends go on from there.
func TestRestartAtPastTheEnd(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 200
	l := openLog(t, dir, cfg)
	for e := int32(1); e <= 4; e++ {
		mustAppend(t, l, makeBatch(1000, []byte("some value to fill the segment up")), e)
	}
	if l.SegmentCount() < 2 {
		t.Fatalf("%d segments", l.SegmentCount())
	}
	if err := l.RestartAt(500); err != nil {
		t.Fatal(err)
	}
	check := func(end int64) {
		t.Helper()
		if l.StartOffset() != 500 || l.EndOffset() != end || l.SegmentCount() != 1 {
			t.Fatalf("log [%d, %d) in %d segments, want [500, %d) in one", l.StartOffset(), l.EndOffset(), l.SegmentCount(), end)
		}
	}
	check(500)
	if got := l.LeaderEpochs(); len(got) != 0 {
		t.Fatalf("epochs %v after a restart", got)
	}
	l.Close()
	l = openLog(t, dir, cfg)
	defer l.Close()
	check(500)
	if _, err := l.AppendAt(makeBatch(1000, []byte("x")), 500, 7); err != nil {
		t.Fatal(err)
	}
	check(501)
	if _, err := l.Read(499, 100, 501); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the restart: %v", err)
	}
}

// at is batch b with base offset and epoch set, as another replica's log
// holds it.
func at(b []byte, base int64, epoch int32) []byte {
	b = bytes.Clone(b)
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(base))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
	return b
}

// AppendCopied stores batches as another compacted log holds them: their
// offsets with the cleaner's gaps, their epochs, and an end past the last
// batch; the copy survives a reopen and appends go on at that end. A log
// that is not compacted refuses a gap.
func TestAppendCopiedKeepsOffsetsGapsAndEnd(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.Compact = true
	cfg.SegmentBytes = 300
	l := openLog(t, dir, cfg)
	if err := l.RestartAt(5); err != nil {
		t.Fatal(err)
	}
	var copied []byte
	for i, base := range []int64{7, 8, 12, 20, 21, 40} {
		copied = append(copied, at(makeBatch(int64(1000+i), []byte("value-of-some-length")), base, int32(1+i/3))...)
	}
	if err := l.AppendCopied(copied, 50); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if l.StartOffset() != 5 || l.EndOffset() != 50 {
			t.Fatalf("log [%d, %d), want [5, 50)", l.StartOffset(), l.EndOffset())
		}
		s, err := l.Read(5, math.MaxInt32, 50)
		if err != nil {
			t.Fatal(err)
		}
		got := readAll(t, s)
		s.Release()
		if !bytes.Equal(got, copied) {
			t.Fatal("read back differs from the batches copied")
		}
		if got := l.LeaderEpochs(); !equalEpochs(got, []EpochEntry{{Epoch: 1, StartOffset: 7}, {Epoch: 2, StartOffset: 20}}) {
			t.Fatalf("epochs %v", got)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = openLog(t, dir, cfg)
	}
	if _, err := l.AppendAt(makeBatch(3000, []byte("next")), 50, 3); err != nil {
		t.Fatalf("append at the copy's end: %v", err)
	}
	if err := l.AppendCopied(at(makeBatch(1, []byte("x")), 40, 3), 0); !errors.Is(err, ErrOffsetMismatch) {
		t.Fatalf("copy of a batch below the log end: %v", err)
	}
	l.Close()

	plain := openLog(t, t.TempDir(), testConfig())
	defer plain.Close()
	if err := plain.AppendCopied(at(makeBatch(1, []byte("x")), 3, 0), 0); !errors.Is(err, ErrOffsetMismatch) {
		t.Fatalf("a gap in a log that is not compacted: %v", err)
	}
}
