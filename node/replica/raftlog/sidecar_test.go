package raftlog

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spool-log/spool/partition"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// runsOfSide makes Raft's own entries come in runs of three (i%7 in 0..2),
// conf changes among them, so cuts and compactions land inside runs.
func runsOfSide(i uint64) pb.EntryType {
	switch i % 7 {
	case 0, 2:
		return pb.EntryNormal
	case 1:
		return pb.EntryConfChange
	}
	return -1
}

func sideIndexes(t *testing.T, dir string) []uint64 {
	t.Helper()
	sc, err := openSidecar(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, e := range sc.ents {
		out = append(out, e.index)
	}
	return out
}

func TestSideEntriesTakeNoOffsetAcrossRollsRestartsAndCuts(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	s := openStorage(t, l, Options{Bootstrap: &pb.ConfState{Voters: []uint64{1, 2, 3}}})
	m := newModel()
	m.side = runsOfSide
	m.appendTo(t, s, 1, 60, threeTerms, "a")
	if l.SegmentCount() < 3 {
		t.Fatalf("%d segments: the test means entries to span segment rolls", l.SegmentCount())
	}
	m.check(t, s, l, 1, 60)
	// Offsets count records only: 60 entries, 26 of them Raft's own.
	records := int64(0)
	for i := uint64(1); i <= 60; i++ {
		if runsOfSide(i) < 0 {
			records += int64(i%3) + 1
		}
	}
	if l.EndOffset() != records {
		t.Fatalf("log ends at %d, want %d (the records alone)", l.EndOffset(), records)
	}
	// The high watermark of a run of Raft's own entries is the end of the
	// batch before the run.
	for _, i := range []uint64{14, 15, 16} {
		if next, _ := s.NextOffset(i); next != m.offsets[17] || next != m.offsets[14] {
			t.Fatalf("NextOffset(%d) = %d, want %d", i, next, m.offsets[17])
		}
	}
	restart := func() {
		t.Helper()
		l.Close()
		l = openLog(t, dir)
		s = openStorage(t, l, Options{})
	}
	restart()
	m.check(t, s, l, 1, 60)

	// A new leader cuts inside a run (15 of 14-16), then at a run's first
	// entry (28 of 28-30), then at the data entry right after a run.
	m.appendTo(t, s, 15, 40, func(uint64) uint64 { return 4 }, "b")
	m.check(t, s, l, 1, 40)
	m.appendTo(t, s, 28, 35, func(uint64) uint64 { return 5 }, "c")
	m.check(t, s, l, 1, 35)
	restart()
	m.check(t, s, l, 1, 35)
	m.appendTo(t, s, 31, 33, func(uint64) uint64 { return 6 }, "d")
	m.check(t, s, l, 1, 33)
	restart()
	m.check(t, s, l, 1, 33)
	if got, want := sideIndexes(t, dir), []uint64{1, 2, 7, 8, 9, 14, 15, 16, 21, 22, 23, 28, 29, 30}; !slices.Equal(got, want) {
		t.Fatalf("sidecar file holds %v, want %v", got, want)
	}
	// A cut that leaves a run at the log's end, and appends after it.
	m.appendTo(t, s, 29, 30, func(uint64) uint64 { return 7 }, "e")
	m.check(t, s, l, 1, 30)
	restart()
	m.check(t, s, l, 1, 30)
	m.appendTo(t, s, 31, 45, func(uint64) uint64 { return 7 }, "f")
	restart()
	m.check(t, s, l, 1, 45)
}

func TestCompactDropsSideEntriesBelowTheSnapshot(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	s := openStorage(t, l, Options{Bootstrap: &pb.ConfState{Voters: []uint64{1, 2, 3}}})
	m := newModel()
	m.side = runsOfSide
	m.appendTo(t, s, 1, 60, threeTerms, "c")
	s.SetHardState(&pb.HardState{Term: proto.Uint64(3), Commit: proto.Uint64(60)})
	cs := &pb.ConfState{Voters: []uint64{1, 2, 3}}
	// Keep the sidecar as it was, to play a crash before Compact rewrote it.
	before, err := os.ReadFile(filepath.Join(dir, sidecarFile))
	if err != nil {
		t.Fatal(err)
	}
	// 29 is inside the run 28-30: the snapshot is a side entry, and the
	// first entry too.
	if err := s.Compact(29, cs); err != nil {
		t.Fatal(err)
	}
	check := func() {
		t.Helper()
		m.check(t, s, l, 30, 60)
		if term, err := s.Term(29); err != nil || term != threeTerms(29) {
			t.Fatalf("Term(FirstIndex-1) = %d, %v", term, err)
		}
		if _, err := s.Term(28); !errors.Is(err, raft.ErrCompacted) {
			t.Fatalf("Term(28): %v", err)
		}
		snap, _ := s.Snapshot()
		if l.StartOffset() != m.offsets[30] || string(snap.Data) != string(stampedOffset(m.offsets[31])) || m.offsets[30] != m.offsets[31] {
			t.Fatalf("log starts at %d, snapshot data %x, want offset %d", l.StartOffset(), snap.Data, m.offsets[31])
		}
		if next, _ := s.NextOffset(29); next != m.offsets[30] {
			t.Fatalf("NextOffset(snapshot) = %d, want the log start %d", next, m.offsets[30])
		}
	}
	check()
	if got := sideIndexes(t, dir); got[0] != 30 {
		t.Fatalf("sidecar file starts at entry %d, want 30", got[0])
	}
	l.Close()
	l = openLog(t, dir)
	s = openStorage(t, l, Options{})
	check()

	// The crash: the snapshot recorded, the sidecar not yet rewritten.
	l.Close()
	if err := os.WriteFile(filepath.Join(dir, sidecarFile), before, 0o644); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir)
	s = openStorage(t, l, Options{})
	check()
	// The next compaction cleans it, at a data entry this time.
	if err := s.Compact(40, cs); err != nil {
		t.Fatal(err)
	}
	m.check(t, s, l, 41, 60)
	if got := sideIndexes(t, dir); got[0] != 42 {
		t.Fatalf("sidecar file after compacting to 40 starts at %d, want 42", got[0])
	}
}

// openBigLog is openLog with segments large enough for a test's batches
// to stay in one.
func openBigLog(t *testing.T, dir string) *partition.Log {
	t.Helper()
	cfg := testConfig()
	cfg.SegmentBytes = 1 << 20
	l, err := partition.Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// lastSegment is the path of the log's last segment file.
func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments of %s: %v, %v", dir, segs, err)
	}
	slices.Sort(segs)
	return segs[len(segs)-1]
}

// crashLosing plays a crash that lost the last lost bytes of the log (the
// tail of an unsynced append, torn inside a batch when torn is set): the
// partition's recovery cuts the log at the last whole batch.
func crashLosing(t *testing.T, dir string, lost int64, torn bool) {
	t.Helper()
	seg := lastSegment(t, dir)
	fi, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	size := fi.Size() - lost
	if torn {
		size += 20
	}
	if err := os.Truncate(seg, size); err != nil {
		t.Fatal(err)
	}
}

// A crash after a side entry was synced but before the batches around it
// reached the disk: side entries sitting past the recovered log end are
// dropped, for good; those at its end stay.
func TestCrashLosesBatchesAroundSideEntries(t *testing.T) {
	for _, c := range []struct {
		name     string
		keep     uint64 // the last data entry the crash keeps
		torn     bool
		wantLast uint64
	}{
		// 1-3 data, 4 side, 5 data, 6 side, 7 data, 8 side.
		{"batch before the last side entry lost", 5, false, 6},
		{"torn batch before two side entries", 3, true, 4},
		{"everything after the first batches", 2, true, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openBigLog(t, dir)
			s := openStorage(t, l, Options{})
			m := newModel()
			m.side = func(i uint64) pb.EntryType {
				if i == 4 || i == 6 || i == 8 {
					return pb.EntryNormal
				}
				return -1
			}
			m.appendTo(t, s, 1, 8, func(uint64) uint64 { return 2 }, "x")
			var lost int64
			for i := c.keep + 1; i <= 8; i++ {
				lost += int64(len(m.ents[i].Data))
			}
			l.Close()
			crashLosing(t, dir, lost, c.torn)
			l = openBigLog(t, dir)
			s = openStorage(t, l, Options{})
			m.forget(c.wantLast + 1)
			m.check(t, s, l, 1, c.wantLast)
			var want []uint64
			for _, i := range []uint64{4, 6, 8} {
				if i <= c.wantLast {
					want = append(want, i)
				}
			}
			if got := sideIndexes(t, dir); !slices.Equal(got, want) {
				t.Fatalf("sidecar file holds %v after the crash, want %v", got, want)
			}
			// The group goes on from there, and a restart sees the same.
			m.appendTo(t, s, c.wantLast+1, 12, func(uint64) uint64 { return 3 }, "y")
			l.Close()
			l = openBigLog(t, dir)
			s = openStorage(t, l, Options{})
			m.check(t, s, l, 1, 12)
		})
	}
}

// A crash inside a sidecar append (before it was synced, so before any
// batch after it): the torn record is cut, the entry is not there.
func TestTornSidecarRecordIsCut(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	s := openStorage(t, l, Options{})
	m := newModel()
	m.side = func(i uint64) pb.EntryType {
		if i == 2 || i == 5 {
			return pb.EntryConfChange
		}
		return -1
	}
	m.appendTo(t, s, 1, 5, func(uint64) uint64 { return 1 }, "t")
	l.Close()
	path := filepath.Join(dir, sidecarFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()-3); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir)
	s = openStorage(t, l, Options{})
	m.forget(5)
	m.check(t, s, l, 1, 4)
	if fi2, _ := os.Stat(path); fi2.Size() >= fi.Size()-3 {
		t.Fatalf("sidecar of %d bytes after the cut, %d before: the torn record is still there", fi2.Size(), fi.Size()-3)
	}
	m.appendTo(t, s, 5, 7, func(uint64) uint64 { return 2 }, "u")
	l.Close()
	l = openLog(t, dir)
	s = openStorage(t, l, Options{})
	m.check(t, s, l, 1, 7)

	// A damaged record that is not the last is refused, not guessed at.
	l.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[10] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir)
	if _, err := Open(l, Options{}); err == nil {
		t.Fatal("opened a Raft log whose sidecar is damaged in the middle")
	}
}

// A transaction marker (control and transactional bits) is an ordinary
// entry: stored, and read back after a reopen.
func TestTransactionMarkersAreEntries(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	s := openStorage(t, l, Options{})
	ctl := recordBatch("marker")
	ctl[offAttributes+1] |= attrControl | attrTxn
	binary.BigEndian.PutUint32(ctl[offCRC:], crc32.Checksum(ctl[offAttributes:], castagnoli))
	if err := s.Append([]*pb.Entry{entry(1, 1, pb.EntryNormal, ctl)}); err != nil {
		t.Fatalf("a transaction marker was refused: %v", err)
	}
	l.Close()
	l = openLog(t, dir)
	s2, err := Open(l, Options{})
	if err != nil {
		t.Fatalf("reopen a log holding a transaction marker: %v", err)
	}
	if last, _ := s2.LastIndex(); last != 1 {
		t.Fatalf("last index %d after reopen, want 1", last)
	}
}

// A log holding a non-transactional control batch (the pre-sidecar
// format, never released) is refused with a reason; Append refuses to
// store one.
func TestControlBatchesAreRefused(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	s := openStorage(t, l, Options{})
	ctl := recordBatch("marker")
	ctl[offAttributes+1] |= attrControl
	binary.BigEndian.PutUint32(ctl[offCRC:], crc32.Checksum(ctl[offAttributes:], castagnoli))
	if err := s.Append([]*pb.Entry{entry(1, 1, pb.EntryNormal, ctl)}); err == nil {
		t.Fatal("a control batch was stored as an entry")
	}
	if _, err := l.AppendAt(ctl, 0, 1); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = openLog(t, dir)
	if _, err := Open(l, Options{}); err == nil {
		t.Fatal("opened a Raft log holding a control batch")
	} else {
		t.Log(err)
	}
}
