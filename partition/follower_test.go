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
