package tier

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spool-log/spool/partition"
)

func seg(base, next int64, id byte) RemoteSegment {
	s := RemoteSegment{Base: base, Next: next, Size: 100, MaxTimestamp: 7, Epoch: 2,
		Epochs: []partition.EpochEntry{{Epoch: 1, StartOffset: base}}}
	s.ID[0] = id
	s.FileSizes[fileLog] = 100
	return s
}

// TestManifestApply: uploads that continue the manifest are kept, a second
// copy of a recorded range or one leaving a gap changes nothing, an
// overlapping upload (a new leader's segment boundaries) is kept, a start
// record drops what is wholly below it, and the file read back is the
// same manifest.
func TestManifestApply(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.SetTiered(true)
	apply := func(b []byte) {
		t.Helper()
		if err := m.ApplyRemote(b); err != nil {
			t.Fatal(err)
		}
	}
	apply(EncodeUpload(seg(0, 10, 1)))
	apply(EncodeUpload(seg(0, 10, 2)))  // a second leader's copy: ignored
	apply(EncodeUpload(seg(20, 30, 3))) // a gap: ignored
	apply(EncodeUpload(seg(10, 20, 4)))
	apply(EncodeUpload(seg(15, 25, 5))) // overlaps: kept
	if f, ok := m.LocalRetentionFloor(); !ok || f != 25 {
		t.Fatalf("floor %d %v, want 25", f, ok)
	}
	if s, ok := m.Find(17); !ok || s.ID[0] != 5 {
		t.Fatalf("find 17: %+v %v", s, ok)
	}
	if s, ok := m.Find(12); !ok || s.ID[0] != 4 {
		t.Fatalf("find 12: %+v %v", s, ok)
	}
	if _, ok := m.Find(25); ok {
		t.Fatal("found 25, past the end")
	}
	apply(EncodeStart(12))
	apply(EncodeStart(5)) // below: ignored
	if m.Start() != 12 || len(m.Segments()) != 2 {
		t.Fatalf("start %d segments %d", m.Start(), len(m.Segments()))
	}
	if _, ok := m.Find(11); ok {
		t.Fatal("found 11, below the remote start")
	}
	m2, err := OpenManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m2.Start() != 12 || m2.End() != 25 || len(m2.Segments()) != 2 {
		t.Fatalf("read back: start %d end %d", m2.Start(), m2.End())
	}
	m2.SetTiered(false)
	if _, ok := m2.LocalRetentionFloor(); ok {
		t.Fatal("an untiered topic has a floor")
	}
	// A damaged file fails the open rather than being trusted.
	b, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	b[len(b)/2] ^= 1
	os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644)
	if _, err := OpenManifest(dir); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("damaged manifest opened: %v", err)
	}
}

func TestRecordRejectsMalformed(t *testing.T) {
	good := EncodeUpload(seg(0, 10, 1))
	for name, b := range map[string][]byte{
		"empty":     nil,
		"version":   append([]byte{9}, good[1:]...),
		"short":     good[:len(good)-1],
		"kind":      {1, 'Z'},
		"neg start": EncodeStart(-1)[:2:2],
		"empty range": func() []byte {
			s := seg(10, 10, 1)
			return EncodeUpload(s)
		}(),
	} {
		if _, err := DecodeRecord(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func TestSegmentDirRoundTrip(t *testing.T) {
	var id SegmentID
	for i := range id {
		id[i] = byte(i * 17)
	}
	base, next, got, ok := ParseSegmentDir(SegmentDir(12345, 12400, id) + "log")
	if !ok || base != 12345 || next != 12400 || got != id {
		t.Fatalf("%d %d %v %v", base, next, got, ok)
	}
	for _, bad := range []string{"", "x/log", "00000000000000012345-00000000000000012400-zz/log",
		"00000000000000012345-00000000000000012345-" + strings.Repeat("a", 32) + "/log", "00000000000000012345-" + strings.Repeat("a", 32)} {
		if _, _, _, ok := ParseSegmentDir(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
	l := Layout{Prefix: "p/"}
	for _, topic := range []string{"..", ".", "a/b", "", strings.Repeat("a", 250)} {
		if _, err := l.PartitionPrefix(topic, 0); err == nil {
			t.Errorf("topic %q accepted as a key", topic)
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(EncodeUpload(seg(0, 10, 1)))
	f.Add(v1(seg(0, 10, 1)))
	f.Add(EncodeStart(5))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRecord(b)
		if err != nil {
			return
		}
		if r.Upload != nil {
			// A version 1 record is read and written as version 2.
			again, err := DecodeRecord(EncodeUpload(*r.Upload))
			if err != nil || !again.Upload.Equal(*r.Upload) || (b[0] == recordVersion && string(EncodeUpload(*r.Upload)) != string(b)) {
				t.Fatalf("upload does not round-trip: %v", err)
			}
		} else if again, err := DecodeRecord(EncodeStart(r.Start)); err != nil || again.Start != r.Start ||
			(b[0] == recordVersion && string(EncodeStart(r.Start)) != string(b)) {
			t.Fatalf("start does not round-trip: %v", err)
		}
	})
}

func FuzzDecodeManifest(f *testing.F) {
	f.Add(EncodeManifest(3, []RemoteSegment{seg(0, 10, 1), seg(10, 20, 2)}))
	f.Add(EncodeManifest(0, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		start, segs, err := DecodeManifest(b)
		if err != nil {
			return
		}
		start2, segs2, err := DecodeManifest(EncodeManifest(start, segs))
		if err != nil || start2 != start || !slices.EqualFunc(segs, segs2, RemoteSegment.Equal) ||
			(b[4] == manifestVersion && string(EncodeManifest(start, segs)) != string(b)) {
			t.Fatalf("manifest does not round-trip: %v", err)
		}
	})
}

// TestManifestCatchUpAfterSnapshot: a replica whose log a Raft snapshot
// moved past upload records it never applied (the killed leader coming
// back) holds the records that arrive meanwhile, answers Gap for what it
// cannot serve yet, and after merging the store's copy holds exactly the
// leader's manifest: the copy's segments, then the held records in order.
// A copy older than the local log start leaves it behind.
func TestManifestCatchUpAfterSnapshot(t *testing.T) {
	leader, err := OpenManifest(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	behind, err := OpenManifest(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	both := func(b []byte) {
		t.Helper()
		for _, m := range []*Manifest{leader, behind} {
			if err := m.ApplyRemote(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	both(EncodeUpload(seg(0, 10, 1)))
	// The follower is down: it misses these.
	for _, s := range []RemoteSegment{seg(10, 20, 2), seg(20, 30, 3)} {
		if err := leader.ApplyRemote(EncodeUpload(s)); err != nil {
			t.Fatal(err)
		}
	}
	staleStart, staleSegs := leader.Start(), leader.Segments() // a copy written at [0,30)
	if err := leader.ApplyRemote(EncodeUpload(seg(30, 40, 4))); err != nil {
		t.Fatal(err)
	}
	// Its own log still starts at 5: nothing to catch up; a log start
	// past its end (a snapshot applied before a restart) is.
	if behind.NeedsMerge(5) || !behind.NeedsMerge(40) || behind.Gap(5) {
		t.Fatalf("before the snapshot: needs merge %v %v, gap at 5 %v", behind.NeedsMerge(5), behind.NeedsMerge(40), behind.Gap(5))
	}
	// The snapshot: its log now starts at 40, the copy is [0,40).
	behind.MarkBehind(40)
	copyStart, copySegs := leader.Start(), leader.Segments()
	both(EncodeUpload(seg(40, 50, 5))) // after the snapshot: held
	both(EncodeUpload(seg(40, 50, 6))) // a second copy of the range: ignored in its place
	if !behind.Gap(0) || !behind.Gap(15) || !behind.Behind() || behind.End() != 10 {
		t.Fatalf("behind: gap %v %v, behind %v, end %d", behind.Gap(0), behind.Gap(15), behind.Behind(), behind.End())
	}
	// A copy short of the local start: merged, still behind.
	if caught, err := behind.Merge(staleStart, staleSegs, true); err != nil || caught {
		t.Fatalf("stale copy: caught %v, %v", caught, err)
	}
	if !behind.Behind() {
		t.Fatal("a copy short of the local start ended the catch-up")
	}
	if caught, err := behind.Merge(copyStart, copySegs, true); err != nil || !caught {
		t.Fatalf("copy: caught %v, %v", caught, err)
	}
	if behind.Behind() || behind.NeedsMerge(40) || behind.Gap(15) {
		t.Fatal("still behind after the merge")
	}
	want, got := leader.Segments(), behind.Segments()
	if len(got) != len(want) {
		t.Fatalf("merged %d segments, leader has %d", len(got), len(want))
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("segment %d: merged %+v, leader %+v", i, got[i], want[i])
		}
	}
	if s, ok := behind.Find(15); !ok || s.ID[0] != 2 {
		t.Fatalf("find 15 after the merge: %+v %v", s, ok)
	}
	// Durable: the file read back is the merged manifest.
	again, err := OpenManifest(filepath.Dir(behind.path))
	if err != nil || again.End() != 50 || len(again.Segments()) != 5 {
		t.Fatalf("read back: end %d, %d segments, %v", again.End(), len(again.Segments()), err)
	}
	// No copy in the store (nothing uploaded): the catch-up ends.
	empty, err := OpenManifest(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	empty.MarkBehind(7)
	if caught, err := empty.Merge(0, nil, false); err != nil || !caught || empty.Behind() {
		t.Fatalf("no copy: caught %v, %v", caught, err)
	}
}

// TestManifestAllExpired: once remote retention has expired every
// segment, the manifest ends at the remote start, not at 0: local
// retention may go up to it, an upload of what lies below it changes
// nothing, and the next upload continues from it.
func TestManifestAllExpired(t *testing.T) {
	m, err := OpenManifest(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m.SetTiered(true)
	for _, b := range [][]byte{EncodeUpload(seg(0, 10, 1)), EncodeUpload(seg(10, 20, 2)), EncodeStart(20), EncodeUpload(seg(0, 10, 3))} {
		if err := m.ApplyRemote(b); err != nil {
			t.Fatal(err)
		}
	}
	if f, ok := m.LocalRetentionFloor(); len(m.Segments()) != 0 || m.End() != 20 || m.Start() != 20 || !ok || f != 20 {
		t.Fatalf("all expired: %d segments, start %d, end %d, floor %d; want none, 20, 20, 20", len(m.Segments()), m.Start(), m.End(), f)
	}
	if err := m.ApplyRemote(EncodeUpload(seg(20, 30, 4))); err != nil || m.End() != 30 || m.Start() != 20 {
		t.Fatalf("the next upload: start %d, end %d (%v); want 20, 30", m.Start(), m.End(), err)
	}
}
