package raftlog

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/partition"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// keyedBatch is one record of key k and value v, as a producer sends it.
func keyedBatch(k, v string) []byte {
	h := recordbatch.NoProducer()
	h.FirstTimestamp, h.MaxTimestamp = 1700000000000, 1700000000000
	b, err := recordbatch.Build(nil, h, []recordbatch.Record{{Key: []byte(k), Value: []byte(v)}}, nil)
	if err != nil {
		panic(err)
	}
	return b
}

func compactedConfig() partition.Config {
	cfg := testConfig()
	cfg.Compact = true
	return cfg
}

func openCompactedLog(t testing.TB, dir string) *partition.Log {
	t.Helper()
	l, err := partition.Open(dir, compactedConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// appendKeyed appends entries from..to, entry i holding key k<i%keys>, in
// term term, and marks them committed.
func appendKeyed(t *testing.T, s *Storage, from, to uint64, keys int, term uint64) {
	t.Helper()
	var ents []*pb.Entry
	for i := from; i <= to; i++ {
		ents = append(ents, entry(i, term, pb.EntryNormal, keyedBatch(fmt.Sprintf("k%d", int(i)%keys), fmt.Sprintf("v%d-%s", i, bytes.Repeat([]byte{'x'}, 40)))))
	}
	if err := s.Append(ents); err != nil {
		t.Fatal(err)
	}
	if err := s.SetHardState(&pb.HardState{Term: proto.Uint64(term), Commit: proto.Uint64(to)}); err != nil {
		t.Fatal(err)
	}
}

// latest reads every record of l and returns each key's last value, and
// how many records it read.
func latest(t *testing.T, l *partition.Log) (map[string]string, int) {
	t.Helper()
	out, n := map[string]string{}, 0
	err := recordbatch.Walk(logBytes(t, l, l.EndOffset()), func(batch []byte, h recordbatch.Header) error {
		recs, err := recordbatch.ParseRecords(nil, batch[recordbatch.HeaderSize:h.Size()], h.NumRecords, h.LastOffsetDelta)
		for _, r := range recs {
			out[string(r.Key)] = string(r.Value)
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, n
}

// A leader seals its committed entries, cleans the records below them, and
// a new follower copies them with the snapshot: it then holds the same
// bytes at the same offsets, across a restart, and takes entries after.
func TestSealedRecordsCopiedWithTheSnapshot(t *testing.T) {
	conf := &pb.ConfState{Voters: []uint64{1, 2}}
	ldir, fdir := t.TempDir(), t.TempDir()
	ll := openCompactedLog(t, ldir)
	ls := openStorage(t, ll, Options{Bootstrap: conf})
	appendKeyed(t, ls, 1, 200, 7, 2)
	if err := ls.Seal(150, conf); err != nil {
		t.Fatal(err)
	}
	if fi, _ := ls.FirstIndex(); fi != 151 {
		t.Fatalf("first index %d after sealing 150", fi)
	}
	if ll.StartOffset() != 0 {
		t.Fatalf("sealing moved the log start to %d", ll.StartOffset())
	}
	before := ll.Size()
	if err := ll.Flush(); err != nil { // the cleaner takes only flushed segments
		t.Fatal(err)
	}
	if _, err := ll.Clean(ls.SnapshotOffset(), 1<<20); err != nil {
		t.Fatal(err)
	}
	if ll.Size() >= before {
		t.Fatalf("cleaning below the snapshot freed nothing: %d bytes, %d before", ll.Size(), before)
	}

	var wire bytes.Buffer
	snap, err := ls.WriteSnapshot(&wire)
	if err != nil {
		t.Fatal(err)
	}
	if !NeedsCopy(snap) || snap.GetMetadata().GetIndex() != 150 {
		t.Fatalf("snapshot %v needs no copy", snap.GetMetadata())
	}

	fl := openCompactedLog(t, fdir)
	fs := openStorage(t, fl, Options{Bootstrap: conf})
	if fs.Staged(snap) {
		t.Fatal("staged before anything was copied")
	}
	if err := fs.ApplySnapshot(snap); err == nil {
		t.Fatal("applied a snapshot whose records are not staged")
	}
	got, err := ReadSnapshotHeader(&wire)
	if err != nil || !sameSnapshot(got, snap) {
		t.Fatalf("snapshot header %v: %v", got.GetMetadata(), err)
	}
	if err := fs.StageSnapshot(got, &wire); err != nil {
		t.Fatal(err)
	}
	if !fs.Staged(snap) {
		t.Fatal("not staged after StageSnapshot")
	}
	if err := fs.ApplySnapshot(snap); err != nil {
		t.Fatal(err)
	}
	if left := stagedFiles(t, fdir); len(left) != 0 {
		t.Fatalf("staged copy left behind: %v", left)
	}
	off := ls.SnapshotOffset()
	for range 2 {
		if fl.StartOffset() != ll.StartOffset() || fl.EndOffset() != off {
			t.Fatalf("follower log [%d, %d), want [%d, %d)", fl.StartOffset(), fl.EndOffset(), ll.StartOffset(), off)
		}
		if !bytes.Equal(logBytes(t, fl, off), logBytes(t, ll, off)) {
			t.Fatal("the follower's records below the snapshot differ from the leader's")
		}
		if fi, _ := fs.FirstIndex(); fi != 151 {
			t.Fatalf("follower first index %d", fi)
		}
		fl.Close()
		fl = openCompactedLog(t, fdir)
		fs = openStorage(t, fl, Options{})
	}
	ents, err := ls.Entries(151, 201, noLimit)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Append(ents); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(logBytes(t, fl, fl.EndOffset()), logBytes(t, ll, ll.EndOffset())) {
		t.Fatal("follower and leader logs differ after the entries past the snapshot")
	}
	want, _ := latest(t, ll)
	have, n := latest(t, fl)
	if len(want) != 7 || fmt.Sprint(have) != fmt.Sprint(want) {
		t.Fatalf("follower's latest values %v, leader's %v", have, want)
	}
	if n >= 200 {
		t.Fatalf("follower holds all %d records: nothing was compacted", n)
	}
}

// A crash after ApplySnapshot recorded a snapshot with records, before the
// copy was done, is finished by Open from the staged copy.
func TestOpenFinishesAnInterruptedCopy(t *testing.T) {
	conf := &pb.ConfState{Voters: []uint64{1, 2}}
	ll := openCompactedLog(t, t.TempDir())
	ls := openStorage(t, ll, Options{Bootstrap: conf})
	appendKeyed(t, ls, 1, 60, 5, 1)
	if err := ls.Seal(40, conf); err != nil {
		t.Fatal(err)
	}
	var wire bytes.Buffer
	snap, err := ls.WriteSnapshot(&wire)
	if err != nil {
		t.Fatal(err)
	}
	fdir := t.TempDir()
	fl := openCompactedLog(t, fdir)
	fs := openStorage(t, fl, Options{Bootstrap: conf})
	appendKeyed(t, fs, 1, 3, 5, 1) // what the follower held before
	if _, err := ReadSnapshotHeader(&wire); err != nil {
		t.Fatal(err)
	}
	if err := fs.StageSnapshot(snap, &wire); err != nil {
		t.Fatal(err)
	}
	// What ApplySnapshot writes first; then the crash.
	m := snapMeta{index: 40, term: 1, conf: conf, offset: ls.SnapshotOffset(), restart: true, copied: true}
	if err := writeFileAtomic(fdir, snapshotFile, encodeSnapMeta(m)); err != nil {
		t.Fatal(err)
	}
	fs.Close()
	fl.Close()
	fl = openCompactedLog(t, fdir)
	fs = openStorage(t, fl, Options{})
	if fi, _ := fs.FirstIndex(); fi != 41 {
		t.Fatalf("first index %d", fi)
	}
	if off := ls.SnapshotOffset(); fl.EndOffset() != off || !bytes.Equal(logBytes(t, fl, off), logBytes(t, ll, off)) {
		t.Fatalf("follower log ends at %d (want %d) or differs from the leader's", fl.EndOffset(), off)
	}
	if left := stagedFiles(t, fdir); len(left) != 0 {
		t.Fatalf("staged copy left behind: %v", left)
	}
}

// A copy that is not what the snapshot says is refused before it is
// staged: a damaged batch, batches out of order, or past the snapshot.
func TestStageSnapshotRefusesABadCopy(t *testing.T) {
	conf := &pb.ConfState{Voters: []uint64{1, 2}}
	ll := openCompactedLog(t, t.TempDir())
	ls := openStorage(t, ll, Options{Bootstrap: conf})
	appendKeyed(t, ls, 1, 30, 5, 1)
	if err := ls.Seal(20, conf); err != nil {
		t.Fatal(err)
	}
	var wire bytes.Buffer
	snap, err := ls.WriteSnapshot(&wire)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSnapshotHeader(&wire); err != nil {
		t.Fatal(err)
	}
	good := wire.Bytes()
	first := int(recordbatch.HeaderSize) + 10
	damaged := bytes.Clone(good)
	damaged[first] ^= 0xff
	h, _ := recordbatch.ParseHeader(good)
	one := int(h.Size())
	swapped := append(bytes.Clone(good[one:2*one]), good[:one]...)
	extra := stamped(keyedBatch("k", "v"), ls.SnapshotOffset(), 1)
	for name, body := range map[string][]byte{
		"damaged":   damaged,
		"reordered": swapped,
		"past":      append(bytes.Clone(good), extra...),
		"torn":      good[:len(good)-3],
	} {
		fs := openStorage(t, openCompactedLog(t, t.TempDir()), Options{Bootstrap: conf})
		if err := fs.StageSnapshot(snap, bytes.NewReader(body)); err == nil {
			t.Errorf("%s copy staged", name)
		} else if fs.Staged(snap) {
			t.Errorf("%s copy refused (%v) but reported staged", name, err)
		}
	}
}

// Retention of a compacted log drops sealed records, never entries; the
// snapshot then starts its records at the new log start.
func TestDropSealedBefore(t *testing.T) {
	conf := &pb.ConfState{Voters: []uint64{1, 2}}
	l := openCompactedLog(t, t.TempDir())
	s := openStorage(t, l, Options{Bootstrap: conf})
	appendKeyed(t, s, 1, 40, 40, 1)
	if err := s.Seal(20, conf); err != nil {
		t.Fatal(err)
	}
	if err := s.DropSealedBefore(5); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 5 {
		t.Fatalf("log start %d, want 5", l.StartOffset())
	}
	snap, _ := s.Snapshot()
	if d, _ := parseSnapData(snap.Data); d.start != 5 || d.offset != 20 {
		t.Fatalf("snapshot data %+v, want records from 5, entries from 20", d)
	}
	if err := s.DropSealedBefore(30); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 20 {
		t.Fatalf("log start %d: moved past the first entry's offset 20", l.StartOffset())
	}
	if snap, _ := s.Snapshot(); NeedsCopy(snap) {
		t.Fatal("a snapshot with no records left still asks for a copy")
	}
	if fi, _ := s.FirstIndex(); fi != 21 {
		t.Fatalf("first index %d", fi)
	}
}

// A copy staged while the copy staged before it is being applied (a
// leader that sent one snapshot and then the next) stays staged: applying
// the first removes only its own copy, and never reads the second's. Before, the second copy's file
// could be renamed in before the first's removal, which then deleted it
// while the second was marked staged, and the replica could neither apply
// the second snapshot nor reopen.
func TestStagingDuringAnApplyKeepsTheNewCopy(t *testing.T) {
	conf := &pb.ConfState{Voters: []uint64{1, 2}}
	ll := openCompactedLog(t, t.TempDir())
	ls := openStorage(t, ll, Options{Bootstrap: conf})
	appendKeyed(t, ls, 1, 400, 7, 2)
	snapshotAt := func(i uint64) (*pb.Snapshot, []byte) {
		if err := ls.Seal(i, conf); err != nil {
			t.Fatal(err)
		}
		if err := ll.Flush(); err != nil {
			t.Fatal(err)
		}
		var wire bytes.Buffer
		snap, err := ls.WriteSnapshot(&wire)
		if err != nil || !NeedsCopy(snap) {
			t.Fatalf("snapshot at %d: %v (needs copy: %v)", i, err, NeedsCopy(snap))
		}
		return snap, wire.Bytes()
	}
	first, firstWire := snapshotAt(150)
	second, secondWire := snapshotAt(300)
	stage := func(fs *Storage, wire []byte) error {
		r := bytes.NewReader(wire)
		snap, err := ReadSnapshotHeader(r)
		if err != nil {
			return err
		}
		return fs.StageSnapshot(snap, r)
	}
	for i := range 15 {
		fl := openCompactedLog(t, t.TempDir())
		fs := openStorage(t, fl, Options{Bootstrap: conf})
		if err := stage(fs, firstWire); err != nil {
			t.Fatal(err)
		}
		applied := make(chan error, 1)
		go func() { applied <- fs.ApplySnapshot(first) }()
		if err := stage(fs, secondWire); err != nil {
			t.Fatal(err)
		}
		// The second copy may land before the first's apply begins: it
		// is staged beside the first, which still applies. What must
		// never happen is an apply begun on one copy and finished on
		// another, or a copy marked staged and gone.
		if err := <-applied; err != nil {
			t.Fatalf("round %d: apply the first snapshot: %v", i, err)
		}
		if !fs.Staged(second) {
			t.Fatalf("round %d: the second copy is not staged", i)
		}
		if err := fs.ApplySnapshot(second); err != nil {
			t.Fatalf("round %d: apply the second snapshot: %v", i, err)
		}
	}
}

// stagedFiles lists the staged copies in dir.
func stagedFiles(t testing.TB, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, copyFile+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// A second snapshot's copy landing before the first snapshot's apply
// begins (the leader moved on while raft held the first) is staged beside
// it: the first still applies, then the second, across a restart too.
// Before, one staged file served every snapshot: the second replaced the
// first, whose apply then failed, and the replica stopped.
func TestSecondCopyBeforeTheFirstApply(t *testing.T) {
	conf := &pb.ConfState{Voters: []uint64{1, 2}}
	ll := openCompactedLog(t, t.TempDir())
	ls := openStorage(t, ll, Options{Bootstrap: conf})
	appendKeyed(t, ls, 1, 400, 7, 2)
	var snaps []*pb.Snapshot
	var wires [][]byte
	for _, i := range []uint64{100, 200, 300} {
		if err := ls.Seal(i, conf); err != nil {
			t.Fatal(err)
		}
		var wire bytes.Buffer
		snap, err := ls.WriteSnapshot(&wire)
		if err != nil || !NeedsCopy(snap) {
			t.Fatalf("snapshot at %d: %v", i, err)
		}
		snaps, wires = append(snaps, snap), append(wires, wire.Bytes())
	}
	stage := func(fs *Storage, wire []byte) {
		t.Helper()
		r := bytes.NewReader(wire)
		snap, err := ReadSnapshotHeader(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := fs.StageSnapshot(snap, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, restart := range []bool{false, true} {
		fdir := t.TempDir()
		fl := openCompactedLog(t, fdir)
		fs := openStorage(t, fl, Options{Bootstrap: conf})
		stage(fs, wires[0])
		stage(fs, wires[1])
		if restart {
			fs.Close()
			fl.Close()
			fl = openCompactedLog(t, fdir)
			fs = openStorage(t, fl, Options{})
		}
		for _, snap := range snaps[:2] {
			if !fs.Staged(snap) {
				t.Fatalf("restart %v: snapshot %d not staged", restart, snap.GetMetadata().GetIndex())
			}
		}
		if err := fs.ApplySnapshot(snaps[0]); err != nil {
			t.Fatalf("restart %v: apply the first snapshot after the second was staged: %v", restart, err)
		}
		if !fs.Staged(snaps[1]) || len(stagedFiles(t, fdir)) != 1 {
			t.Fatalf("restart %v: after the first apply, second staged %v, files %v", restart, fs.Staged(snaps[1]), stagedFiles(t, fdir))
		}
		// A third lands; applying it makes the second outdated: both go.
		stage(fs, wires[2])
		if err := fs.ApplySnapshot(snaps[2]); err != nil {
			t.Fatalf("restart %v: apply the third snapshot: %v", restart, err)
		}
		if left := stagedFiles(t, fdir); len(left) != 0 || fs.Staged(snaps[1]) {
			t.Fatalf("restart %v: outdated copies left: %v", restart, left)
		}
		off := ls.SnapshotOffset()
		if fl.EndOffset() != off || !bytes.Equal(logBytes(t, fl, off), logBytes(t, ll, off)) {
			t.Fatalf("restart %v: follower log ends at %d (want %d) or differs from the leader's", restart, fl.EndOffset(), off)
		}
	}
}

// At most maxStaged copies are kept, the oldest dropped first.
func TestStagedCopiesBounded(t *testing.T) {
	conf := &pb.ConfState{Voters: []uint64{1, 2}}
	ll := openCompactedLog(t, t.TempDir())
	ls := openStorage(t, ll, Options{Bootstrap: conf})
	appendKeyed(t, ls, 1, 400, 7, 2)
	fdir := t.TempDir()
	fs := openStorage(t, openCompactedLog(t, fdir), Options{Bootstrap: conf})
	var snaps []*pb.Snapshot
	for i := uint64(1); i <= maxStaged+2; i++ {
		if err := ls.Seal(i*50, conf); err != nil {
			t.Fatal(err)
		}
		var wire bytes.Buffer
		snap, err := ls.WriteSnapshot(&wire)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ReadSnapshotHeader(&wire); err != nil {
			t.Fatal(err)
		}
		if err := fs.StageSnapshot(snap, &wire); err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, snap)
	}
	if n := len(stagedFiles(t, fdir)); n != maxStaged {
		t.Fatalf("%d copies staged, want %d", n, maxStaged)
	}
	for i, snap := range snaps {
		if want := i >= 2; fs.Staged(snap) != want {
			t.Fatalf("snapshot %d staged %v, want %v", snap.GetMetadata().GetIndex(), !want, want)
		}
	}
}
