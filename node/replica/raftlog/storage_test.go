package raftlog

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spool-log/spool/partition"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// model is what a log should hold: entries by index (from 1), with the
// offsets their batches got (for Raft's own entries, the offset they sit
// before).
type model struct {
	ents    map[uint64]*pb.Entry // as Entries must return them
	offsets map[uint64]int64
	end     int64
	// side says which entries are Raft's own (not record batches); by
	// default every tenth is an empty entry and every 17th a conf change.
	side func(i uint64) pb.EntryType
}

func newModel() *model {
	return &model{ents: map[uint64]*pb.Entry{}, offsets: map[uint64]int64{}, side: sparseSide}
}

func sparseSide(i uint64) pb.EntryType {
	switch {
	case i%10 == 0:
		return pb.EntryNormal
	case i%17 == 0:
		return pb.EntryConfChange
	}
	return -1
}

// appendTo appends entries lo..hi to s with terms from termOf; m.side picks
// Raft's own entries, which take no offset. The model forgets what the
// append replaces.
func (m *model) appendTo(t *testing.T, s *Storage, lo, hi uint64, termOf func(uint64) uint64, tag string) {
	t.Helper()
	m.forget(lo)
	var ents []*pb.Entry
	for i := lo; i <= hi; i++ {
		term := termOf(i)
		var e, want *pb.Entry
		switch m.side(i) {
		case pb.EntryNormal:
			e = entry(i, term, pb.EntryNormal, nil)
			want = e
			m.offsets[i] = m.end
		case pb.EntryConfChange:
			cc, _ := proto.Marshal(&pb.ConfChange{Type: pb.ConfChangeAddLearnerNode.Enum(), NodeId: proto.Uint64(i)})
			e = entry(i, term, pb.EntryConfChange, cc)
			want = e
			m.offsets[i] = m.end
		default:
			n := int(i%3) + 1
			var vals []string
			for k := range n {
				vals = append(vals, fmt.Sprintf("%s-%d-%d-%s", tag, i, k, bytes.Repeat([]byte{'x'}, int(i%7)*20)))
			}
			b := recordBatch(vals...)
			e = entry(i, term, pb.EntryNormal, b)
			want = entry(i, term, pb.EntryNormal, stamped(b, m.end, term))
			m.offsets[i], m.end = m.end, m.end+int64(n)
		}
		ents = append(ents, e)
		m.ents[i] = want
	}
	orig := make([][]byte, len(ents))
	for k, e := range ents {
		orig[k] = bytes.Clone(e.Data)
	}
	if err := s.Append(ents); err != nil {
		t.Fatal(err)
	}
	for k, e := range ents {
		if !bytes.Equal(e.Data, orig[k]) {
			t.Fatalf("Append changed the data of entry %d, which raft may still hold", e.GetIndex())
		}
	}
}

// forget drops the entries from lo on, as a cut or a crash does.
func (m *model) forget(lo uint64) {
	if o, ok := m.offsets[lo]; ok {
		m.end = o
		for i := range m.ents {
			if i >= lo {
				delete(m.ents, i)
				delete(m.offsets, i)
			}
		}
	}
}

// check compares everything s answers with the model, for [first, last].
func (m *model) check(t *testing.T, s *Storage, l *partition.Log, first, last uint64) {
	t.Helper()
	fi, _ := s.FirstIndex()
	li, _ := s.LastIndex()
	if fi != first || li != last {
		t.Fatalf("first/last index %d/%d, want %d/%d", fi, li, first, last)
	}
	ents, err := s.Entries(first, last+1, noLimit)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(ents)) != last-first+1 {
		t.Fatalf("%d entries, want %d", len(ents), last-first+1)
	}
	for k, e := range ents {
		i := first + uint64(k)
		want := m.ents[i]
		if !proto.Equal(e, want) {
			t.Fatalf("entry %d: got type %v term %d data %d bytes, want type %v term %d data %d bytes",
				i, e.GetType(), e.GetTerm(), len(e.Data), want.GetType(), want.GetTerm(), len(want.Data))
		}
		if term, err := s.Term(i); err != nil || term != want.GetTerm() {
			t.Fatalf("Term(%d) = %d, %v, want %d", i, term, err, want.GetTerm())
		}
		if next, err := s.NextOffset(i); err != nil || next != m.offsetAfter(i) {
			t.Fatalf("NextOffset(%d) = %d, %v, want %d", i, next, err, m.offsetAfter(i))
		}
	}
	if _, err := s.Term(last + 1); !errors.Is(err, raft.ErrUnavailable) {
		t.Fatalf("Term(last+1): %v, want ErrUnavailable", err)
	}
	if l.EndOffset() != m.end {
		t.Fatalf("log ends at %d, want %d", l.EndOffset(), m.end)
	}
	// The segment log holds exactly the record batch entries, back to
	// back at their offsets: nothing of Raft's own entries.
	got := logBytes(t, l, m.end)
	var want []byte
	for i := first; i <= last; i++ {
		if e := m.ents[i]; isData(e) {
			want = append(want, e.Data...)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("log bytes (%d) differ from the entries' batches (%d)", len(got), len(want))
	}
	// And the sidecar exactly Raft's own entries after the snapshot.
	var sideWant []uint64
	for i := first; i <= last; i++ {
		if !isData(m.ents[i]) {
			sideWant = append(sideWant, i)
		}
	}
	var sideGot []uint64
	for _, e := range s.side.ents {
		if e.index >= first {
			sideGot = append(sideGot, e.index)
		}
		if e.index < first {
			t.Fatalf("sidecar keeps entry %d, below the snapshot %d", e.index, first-1)
		}
	}
	if !slices.Equal(sideGot, sideWant) {
		t.Fatalf("sidecar holds entries %v, want %v", sideGot, sideWant)
	}
}

func (m *model) offsetAfter(i uint64) int64 {
	if o, ok := m.offsets[i+1]; ok {
		return o
	}
	return m.end
}

func threeTerms(i uint64) uint64 { return 1 + min(i/20, 2) }

func TestEntriesTermsAcrossSegmentRolls(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	s := openStorage(t, l, Options{Bootstrap: &pb.ConfState{Voters: []uint64{1, 2, 3}}})
	m := newModel()
	m.check(t, s, l, 1, 0)
	if term, err := s.Term(0); err != nil || term != 0 {
		t.Fatalf("Term(0) of a new log = %d, %v", term, err)
	}
	m.appendTo(t, s, 1, 60, threeTerms, "a")
	if l.SegmentCount() < 5 {
		t.Fatalf("%d segments: the test means entries to span segment rolls", l.SegmentCount())
	}
	m.check(t, s, l, 1, 60)
	_, cs, _ := s.InitialState()
	if !slices.Equal(cs.Voters, []uint64{1, 2, 3}) {
		t.Fatalf("conf state %v", cs)
	}
	// The partition's leader-epoch cache is the Raft terms.
	if got := l.LeaderEpochs(); len(got) != 3 || got[1] != (partition.EpochEntry{Epoch: 2, StartOffset: m.offsets[20]}) || got[2].Epoch != 3 {
		t.Fatalf("leader epochs %v", got)
	}
	// A stored entry whose index is appended again with the same term is
	// rewritten in place of itself: nothing changes.
	m.appendTo(t, s, 55, 60, threeTerms, "a")
	m.check(t, s, l, 1, 60)
}

func TestRestartReloadsTheSameState(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	s := openStorage(t, l, Options{Bootstrap: &pb.ConfState{Voters: []uint64{1, 2, 3}}})
	m := newModel()
	m.appendTo(t, s, 1, 45, threeTerms, "r")
	hs := func(term, vote, commit uint64) *pb.HardState {
		return &pb.HardState{Term: proto.Uint64(term), Vote: proto.Uint64(vote), Commit: proto.Uint64(commit)}
	}
	if err := s.SetHardState(hs(3, 2, 10)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetHardState(hs(3, 2, 40)); err != nil { // commit only: not written
		t.Fatal(err)
	}
	if onDisk, err := readHardState(dir); err != nil || !proto.Equal(onDisk, hs(3, 2, 10)) {
		t.Fatalf("hard state on disk %v, %v: a commit alone must not cost a write", onDisk, err)
	}

	// A crash (no Close) restarts from the commit last written.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir)
	s = openStorage(t, l, Options{Bootstrap: &pb.ConfState{Voters: []uint64{7}}})
	m.check(t, s, l, 1, 45)
	got, cs, _ := s.InitialState()
	if !proto.Equal(got, hs(3, 2, 10)) || !slices.Equal(cs.Voters, []uint64{1, 2, 3}) {
		t.Fatalf("after a crash: hard state %v, conf %v", got, cs)
	}

	// Close saves the lazy commit.
	if err := s.SetHardState(hs(3, 2, 40)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = openLog(t, dir)
	defer l.Close()
	s = openStorage(t, l, Options{})
	m.check(t, s, l, 1, 45)
	if got, _, _ := s.InitialState(); !proto.Equal(got, hs(3, 2, 40)) {
		t.Fatalf("after Close: hard state %v", got)
	}
	// And goes on appending where it stopped.
	m.appendTo(t, s, 46, 50, func(uint64) uint64 { return 4 }, "r2")
	m.check(t, s, l, 1, 50)
}

func TestTruncateDivergedSuffix(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	s := openStorage(t, l, Options{})
	m := newModel()
	m.appendTo(t, s, 1, 50, func(i uint64) uint64 { return 1 + i/25 }, "old")
	// A new leader of term 5 replaces entries from 31 on, fewer of them.
	m.appendTo(t, s, 31, 38, func(uint64) uint64 { return 5 }, "new")
	m.check(t, s, l, 1, 38)
	if got := l.LeaderEpochs(); got[len(got)-1] != (partition.EpochEntry{Epoch: 5, StartOffset: m.offsets[31]}) {
		t.Fatalf("leader epochs %v after the cut", got)
	}
	// A cut at a segment boundary and at the very first entry.
	m.appendTo(t, s, 2, 4, func(uint64) uint64 { return 6 }, "again")
	m.check(t, s, l, 1, 4)
	m.appendTo(t, s, 1, 3, func(uint64) uint64 { return 7 }, "first")
	m.check(t, s, l, 1, 3)
	l.Close()
	l = openLog(t, dir)
	defer l.Close()
	s = openStorage(t, l, Options{})
	m.check(t, s, l, 1, 3)
	// A gap is refused.
	if err := s.Append([]*pb.Entry{entry(5, 7, pb.EntryNormal, nil)}); err == nil {
		t.Fatal("append of entry 5 after 3 accepted")
	}
}

func TestCompactAndTermBeforeFirstIndex(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	s := openStorage(t, l, Options{Bootstrap: &pb.ConfState{Voters: []uint64{1, 2, 3}}})
	m := newModel()
	m.appendTo(t, s, 1, 60, threeTerms, "c")
	if err := s.Compact(30, &pb.ConfState{Voters: []uint64{1, 2, 3}}); err == nil {
		t.Fatal("compaction past the commit index accepted")
	}
	s.SetHardState(&pb.HardState{Term: proto.Uint64(3), Commit: proto.Uint64(50)})
	segs := l.SegmentCount()
	cs := &pb.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}}
	if err := s.Compact(30, cs); err != nil {
		t.Fatal(err)
	}
	check := func() {
		t.Helper()
		m.check(t, s, l, 31, 60)
		if term, err := s.Term(30); err != nil || term != threeTerms(30) {
			t.Fatalf("Term(FirstIndex-1) = %d, %v", term, err)
		}
		if _, err := s.Term(29); !errors.Is(err, raft.ErrCompacted) {
			t.Fatalf("Term(29): %v", err)
		}
		if _, err := s.Entries(30, 32, noLimit); !errors.Is(err, raft.ErrCompacted) {
			t.Fatalf("Entries(30, 32): %v", err)
		}
		snap, _ := s.Snapshot()
		md := snap.GetMetadata()
		if md.GetIndex() != 30 || md.GetTerm() != threeTerms(30) || md.GetConfState().Equivalent(cs) != nil {
			t.Fatalf("snapshot %v", md)
		}
		if l.StartOffset() != m.offsets[31] || !bytes.Equal(snap.Data, stampedOffset(m.offsets[31])) {
			t.Fatalf("log starts at %d, snapshot data %x, want offset %d", l.StartOffset(), snap.Data, m.offsets[31])
		}
		// (Entry 30 is an empty entry, which sits at entry 31's offset.)
		if _, err := l.Read(m.offsets[29], 1, m.end); !errors.Is(err, partition.ErrOffsetOutOfRange) {
			t.Fatalf("a consumer reading below the snapshot: %v", err)
		}
	}
	check()
	if l.SegmentCount() >= segs {
		t.Fatalf("%d segments before compaction, %d after: none deleted", segs, l.SegmentCount())
	}
	l.Close()
	l = openLog(t, dir)
	defer l.Close()
	s = openStorage(t, l, Options{})
	check()
	// Compacting everything leaves Term(last) answerable and the log empty.
	s.SetHardState(&pb.HardState{Term: proto.Uint64(3), Commit: proto.Uint64(60)})
	if err := s.Compact(60, cs); err != nil {
		t.Fatal(err)
	}
	if fi, _ := s.FirstIndex(); fi != 61 {
		t.Fatalf("first index %d", fi)
	}
	if term, err := s.Term(60); err != nil || term != 3 {
		t.Fatalf("Term(60) = %d, %v", term, err)
	}
}

func stampedOffset(o int64) []byte {
	return stamped(make([]byte, 8+4+4), o, 0)[:8]
}

func TestApplySnapshotRestartsTheLog(t *testing.T) {
	// A leader whose log starts at entry 31.
	ldir := t.TempDir()
	ll := openLog(t, ldir)
	defer ll.Close()
	leader := openStorage(t, ll, Options{Bootstrap: &pb.ConfState{Voters: []uint64{1, 2, 3}}})
	lm := newModel()
	lm.appendTo(t, leader, 1, 60, threeTerms, "L")
	leader.SetHardState(&pb.HardState{Term: proto.Uint64(3), Commit: proto.Uint64(60)})
	if err := leader.Compact(30, &pb.ConfState{Voters: []uint64{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	snap, _ := leader.Snapshot()

	// A follower that holds a few entries of its own.
	dir := t.TempDir()
	l := openLog(t, dir)
	s := openStorage(t, l, Options{Bootstrap: &pb.ConfState{Voters: []uint64{1, 2, 3}}})
	m := newModel()
	m.appendTo(t, s, 1, 12, func(uint64) uint64 { return 1 }, "F")
	if err := s.ApplySnapshot(snap); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplySnapshot(snap); !errors.Is(err, raft.ErrSnapOutOfDate) {
		t.Fatalf("applying the same snapshot again: %v", err)
	}
	start := lm.offsets[31]
	if l.StartOffset() != start || l.EndOffset() != start {
		t.Fatalf("follower log holds [%d, %d), want an empty log at %d", l.StartOffset(), l.EndOffset(), start)
	}
	if term, err := s.Term(30); err != nil || term != threeTerms(30) {
		t.Fatalf("Term(30) = %d, %v", term, err)
	}
	// Raft sends the entries after the snapshot: the follower's bytes are the
	// leader's.
	ents, err := leader.Entries(31, 61, noLimit)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ents); err != nil {
		t.Fatal(err)
	}
	restarted := func() {
		t.Helper()
		lm.check(t, s, l, 31, 60)
		if !bytes.Equal(logBytes(t, l, l.EndOffset()), logBytes(t, ll, ll.EndOffset())) {
			t.Fatal("follower and leader logs differ")
		}
	}
	restarted()
	l.Close()
	l = openLog(t, dir)
	s = openStorage(t, l, Options{})
	restarted()
	if hs, _, _ := s.InitialState(); hs.GetCommit() < 30 {
		t.Fatalf("commit %d below the snapshot", hs.GetCommit())
	}

	// A crash after the snapshot was recorded but before the log was
	// emptied: Open finishes it.
	l.Close()
	m2 := snapMeta{index: 70, term: 4, conf: &pb.ConfState{Voters: []uint64{1, 2, 3}}, offset: lm.end + 100, restart: true}
	if err := writeFileAtomic(dir, snapshotFile, encodeSnapMeta(m2)); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir)
	defer l.Close()
	s = openStorage(t, l, Options{})
	if fi, _ := s.FirstIndex(); fi != 71 || l.StartOffset() != m2.offset || l.EndOffset() != m2.offset {
		t.Fatalf("after an interrupted snapshot: first index %d, log [%d, %d)", fi, l.StartOffset(), l.EndOffset())
	}
	if m3, _, _ := readSnapMeta(dir); m3.restart {
		t.Fatal("the restart mark is still set")
	}
}

func TestEntriesBounds(t *testing.T) {
	l := openLog(t, t.TempDir())
	defer l.Close()
	s := openStorage(t, l, Options{})
	var ents []*pb.Entry
	for i := uint64(1); i <= 10; i++ {
		ents = append(ents, entry(i, 1, pb.EntryNormal, recordBatch(fmt.Sprint(bytes.Repeat([]byte{'v'}, 300)))))
	}
	if err := s.Append(ents); err != nil {
		t.Fatal(err)
	}
	all, err := s.Entries(1, 11, noLimit)
	if err != nil || len(all) != 10 {
		t.Fatalf("%d entries, %v", len(all), err)
	}
	three := uint64(proto.Size(all[0]) + proto.Size(all[1]) + proto.Size(all[2]))
	for _, c := range []struct {
		max  uint64
		want int
	}{{0, 1}, {1, 1}, {three - 1, 2}, {three, 3}, {three + 1, 3}, {noLimit, 10}} {
		got, err := s.Entries(1, 11, c.max)
		if err != nil || len(got) != c.want {
			t.Fatalf("Entries(1, 11, %d): %d entries, %v; want %d", c.max, len(got), err, c.want)
		}
	}
	if got, err := s.Entries(4, 6, noLimit); err != nil || len(got) != 2 || got[0].GetIndex() != 4 {
		t.Fatalf("Entries(4, 6): %v, %v", got, err)
	}
	if _, err := s.Entries(0, 3, noLimit); !errors.Is(err, raft.ErrCompacted) {
		t.Fatalf("Entries(0, 3): %v", err)
	}
	if _, err := s.Entries(5, 12, noLimit); !errors.Is(err, raft.ErrUnavailable) {
		t.Fatalf("Entries(5, 12): %v", err)
	}
	if err := s.Append([]*pb.Entry{entry(11, 1, pb.EntryNormal, []byte("not a batch"))}); err == nil {
		t.Fatal("an entry that is not a record batch was stored")
	}
	if err := s.Append([]*pb.Entry{entry(11, 1<<31, pb.EntryNormal, nil)}); err == nil {
		t.Fatal("a term beyond a leader epoch was stored")
	}
}

func TestOpenRefusesALogStartMovedBehindItsBack(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	s := openStorage(t, l, Options{})
	m := newModel()
	m.appendTo(t, s, 1, 20, threeTerms, "x")
	if _, err := l.DeleteRecordsBefore(m.offsets[5]); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = openLog(t, dir)
	defer l.Close()
	if _, err := Open(l, Options{}); err == nil {
		t.Fatal("opened a Raft log whose start moved without it")
	}
	// Damaged state is refused, not guessed at.
	if err := os.WriteFile(filepath.Join(dir, hardStateFile), []byte("SPHS\x01garbage!"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readHardState(dir); err == nil {
		t.Fatal("a damaged hard state file was read")
	}
}

// A single-copy log that becomes a Raft log keeps its records, below the
// first entry, across opens, as its snapshot's records.
func TestAdoptsASingleCopyLog(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	for range 5 {
		if _, err := l.Append(recordBatch("old", "records"), -1); err != nil {
			t.Fatal(err)
		}
	}
	s := openStorage(t, l, Options{Bootstrap: &pb.ConfState{Voters: []uint64{1}}})
	m := newModel()
	m.end = 10
	m.appendTo(t, s, 1, 3, func(uint64) uint64 { return 1 }, "new")
	for range 2 {
		if fi, _ := s.FirstIndex(); fi != 1 {
			t.Fatalf("first index %d", fi)
		}
		// The adopted records are the snapshot's: a follower given it
		// copies them.
		if snap, _ := s.Snapshot(); !bytes.Equal(snap.Data, (snapData{offset: 10, start: 0}).encode()) || !NeedsCopy(snap) {
			t.Fatalf("snapshot data %x, want entries from 10 and records from 0", snap.Data)
		}
		if l.StartOffset() != 0 || l.EndOffset() != m.end {
			t.Fatalf("log [%d, %d), want [0, %d)", l.StartOffset(), l.EndOffset(), m.end)
		}
		l.Close()
		l = openLog(t, dir)
		s = openStorage(t, l, Options{})
	}
	if ents, err := s.Entries(1, 4, noLimit); err != nil || !proto.Equal(ents[0], m.ents[1]) {
		t.Fatalf("entries after the adopted records: %v", err)
	}
}

// TestChangesTermVote: a hard state differing from the one on disk only in
// its commit may go out after messages; a new term or vote may not.
func TestChangesTermVote(t *testing.T) {
	l := openLog(t, t.TempDir())
	s := openStorage(t, l, Options{Bootstrap: &pb.ConfState{Voters: []uint64{1}}})
	hs := func(term, vote, commit uint64) *pb.HardState {
		return &pb.HardState{Term: proto.Uint64(term), Vote: proto.Uint64(vote), Commit: proto.Uint64(commit)}
	}
	if err := s.SetHardState(hs(2, 1, 0)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		hs   *pb.HardState
		want bool
	}{
		{nil, false},
		{hs(2, 1, 0), false},
		{hs(2, 1, 7), false},
		{hs(3, 1, 7), true},
		{hs(2, 3, 0), true},
	} {
		if got := s.ChangesTermVote(tc.hs); got != tc.want {
			t.Errorf("ChangesTermVote(%v) = %v, want %v", tc.hs, got, tc.want)
		}
	}
}

// A replica closed and opened again over a log still open, with a batch a
// scrub marked corrupt in the middle (node/hosted's repair reopens a
// damaged replica fenced when its peers are not caught up), numbers every
// entry, the damaged one too: the walk at open steps over the marked batch,
// whose length is sound. It used to stop there ("entries end at offset N,
// the log at M") and the partition stayed closed.
func TestReopenNumbersEntriesPastAScrubMarkedBatch(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	s := openStorage(t, l, Options{Bootstrap: &pb.ConfState{Voters: []uint64{1, 2, 3}}})
	m := newModel()
	m.appendTo(t, s, 1, 45, threeTerms, "d")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(segs) < 3 {
		t.Fatalf("segments %v, %v: want at least three", segs, err)
	}
	slices.Sort(segs)
	f, err := os.OpenFile(segs[1], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	const at = 70 // a record's bytes inside the sealed segment's first batch
	if _, err := f.ReadAt(b[:], at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b[:], at); err != nil {
		t.Fatal(err)
	}
	f.Close()
	res, err := l.Scrub(func(int64) error { return nil })
	if err != nil || len(res.Corrupt) != 1 {
		t.Fatalf("scrub: %+v, %v: want the one damaged batch", res, err)
	}
	if _, err := l.ReadBelowStart(res.Corrupt[0].Offset, math.MaxInt, l.EndOffset()); !errors.Is(err, partition.ErrCorrupt) {
		t.Fatalf("a read at the damaged batch: %v, want ErrCorrupt (it is fenced)", err)
	}

	s, err = Open(l, Options{})
	if err != nil {
		t.Fatalf("reopen over the marked batch: %v", err)
	}
	defer s.Close()
	if last, _ := s.LastIndex(); last != 45 {
		t.Fatalf("last index %d after the reopen, want 45", last)
	}
	for i := uint64(1); i <= 45; i++ {
		if term, err := s.Term(i); err != nil || term != threeTerms(i) {
			t.Fatalf("entry %d: term %d, %v; want %d", i, term, err, threeTerms(i))
		}
	}
}
