package tier

import (
	"encoding/binary"
	"hash/crc32"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spool-log/spool/partition"
)

func eps(pairs ...int64) []partition.EpochEntry {
	var out []partition.EpochEntry
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, partition.EpochEntry{Epoch: int32(pairs[i]), StartOffset: pairs[i+1]})
	}
	return out
}

// TestSegmentEpochs: an upload carries the epoch in effect at its base
// and the ones starting inside it; past the bound the first and the last
// ones are kept.
func TestSegmentEpochs(t *testing.T) {
	cache := eps(1, 0, 3, 50, 4, 120, 6, 200)
	for _, c := range []struct {
		base, next int64
		want       []partition.EpochEntry
	}{
		{60, 150, eps(3, 60, 4, 120)},
		{120, 150, eps(4, 120)},
		{0, 50, eps(1, 0)},
		{10, 300, eps(1, 10, 3, 50, 4, 120, 6, 200)},
		{300, 400, eps(6, 300)},
	} {
		if got := SegmentEpochs(cache, c.base, c.next); !slices.Equal(got, c.want) {
			t.Errorf("[%d,%d): %v, want %v", c.base, c.next, got, c.want)
		}
	}
	var many []partition.EpochEntry
	for i := range 3000 {
		many = append(many, partition.EpochEntry{Epoch: int32(i), StartOffset: int64(i)})
	}
	got := SegmentEpochs(many, 0, 3000)
	if len(got) != maxSegmentEpochs || got[0].Epoch != 0 || got[1].Epoch != 3000-maxSegmentEpochs+1 || got[len(got)-1].Epoch != 2999 {
		t.Fatalf("%d epochs kept: first %v, second %v, last %v", len(got), got[0], got[1], got[len(got)-1])
	}
	s := seg(0, 3000, 1)
	s.Epochs = got
	r, err := DecodeRecord(EncodeUpload(s))
	if err != nil || !r.Upload.Equal(s) {
		t.Fatalf("bounded epochs do not round-trip: %v", err)
	}
}

// v1 is s's record as version 1 wrote it: no epochs.
func v1(s RemoteSegment) []byte {
	b := EncodeUpload(s)[:uploadRecordSize]
	b[0] = 1
	return b
}

// TestVersion1RecordsRead: records and manifests written before uploads
// carried their epochs are read, with no epochs, and written back as
// version 2.
func TestVersion1RecordsRead(t *testing.T) {
	s := seg(0, 10, 1)
	r, err := DecodeRecord(v1(s))
	if err != nil || r.Upload.Epochs != nil || r.Upload.Base != 0 || r.Upload.Next != 10 || r.Upload.ID != s.ID {
		t.Fatalf("version 1 upload: %+v %v", r.Upload, err)
	}
	// A version 1 manifest: version 1 header, version 1 records.
	m := EncodeManifest(0, nil)
	old := append([]byte{}, m[:4]...)
	old = append(old, 1)
	old = append(old, m[5:13]...)
	old = append(old, 0, 0, 0, 2)
	old = append(old, v1(seg(0, 10, 1))...)
	old = append(old, v1(seg(10, 20, 2))...)
	old = appendCRC(old)
	start, segs, err := DecodeManifest(old)
	if err != nil || start != 0 || len(segs) != 2 || segs[1].Base != 10 || segs[0].Epochs != nil {
		t.Fatalf("version 1 manifest: %d %+v %v", start, segs, err)
	}
	// A version 1 manifest holding a version 2 record is damaged.
	mixed := append([]byte{}, old[:len(old)-4-uploadRecordSize]...)
	mixed = appendCRC(append(mixed, EncodeUpload(seg(10, 20, 2))...))
	if _, _, err := DecodeManifest(mixed); err == nil {
		t.Fatal("a version 1 manifest with a version 2 record decoded")
	}
}

func TestRecordRejectsBadEpochs(t *testing.T) {
	for name, e := range map[string][]partition.EpochEntry{
		"below base":     eps(1, 9),
		"at next":        eps(1, 20),
		"epoch down":     eps(3, 10, 2, 12),
		"start down":     eps(2, 15, 3, 12),
		"negative epoch": eps(-1, 10),
	} {
		s := seg(10, 20, 1)
		s.Epochs = e
		if _, err := DecodeRecord(EncodeUpload(s)); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	s := seg(10, 20, 1)
	b := EncodeUpload(s)
	b[uploadRecordSize], b[uploadRecordSize+1] = 0xff, 0xff // a count past the bound
	if _, err := DecodeRecord(b); err == nil {
		t.Error("epoch count past the bound decoded")
	}
}

// TestManifestEpochs: the remote records' epochs are the uploads' joined,
// an overlapping upload adding only what is new, raised to the remote
// start, cut at the local start; an upload recorded without epochs adds
// nothing; the local cache continues them.
func TestManifestEpochs(t *testing.T) {
	m, err := OpenManifest(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m.SetTiered(true)
	up := func(base, next int64, id byte, e []partition.EpochEntry) {
		t.Helper()
		s := seg(base, next, id)
		s.Epochs = e
		b := EncodeUpload(s)
		if e == nil {
			b = v1(s)
		}
		if err := m.ApplyRemote(b); err != nil {
			t.Fatal(err)
		}
	}
	up(0, 10, 1, eps(1, 0, 2, 5))
	up(10, 20, 2, eps(2, 10, 3, 15))
	up(15, 25, 3, eps(3, 15, 4, 22)) // overlaps
	up(25, 30, 4, nil)               // recorded by version 1
	up(30, 40, 5, eps(5, 30))
	for _, c := range []struct {
		below int64
		want  []partition.EpochEntry
	}{
		{100, eps(1, 0, 2, 5, 3, 15, 4, 22, 5, 30)},
		{15, eps(1, 0, 2, 5)},
		{5, eps(1, 0)},
	} {
		if got := m.Epochs(c.below); !slices.Equal(got, c.want) {
			t.Errorf("epochs below %d: %v, want %v", c.below, got, c.want)
		}
	}
	if err := m.ApplyRemote(EncodeStart(6)); err != nil {
		t.Fatal(err)
	}
	if got, want := m.Epochs(100), eps(2, 6, 3, 15, 4, 22, 5, 30); !slices.Equal(got, want) {
		t.Errorf("from the remote start 6: %v, want %v", got, want)
	}
	m2, err := OpenManifest(filepath.Dir(m.path))
	if err != nil || !slices.Equal(m2.Epochs(100), m.Epochs(100)) {
		t.Fatalf("reopened: %v %v", m2.Epochs(100), err)
	}

	view := func(localStart int64) View { return View{m: m, local: fixedStart(localStart)} }
	for _, c := range []struct {
		localStart int64
		local      []partition.EpochEntry
		want       []partition.EpochEntry
	}{
		// Epoch 5 continues across the local start: its remote start.
		{35, eps(5, 35, 6, 38), eps(2, 6, 3, 15, 4, 22, 5, 30, 6, 38)},
		// A new epoch from the local start.
		{40, eps(6, 40), eps(2, 6, 3, 15, 4, 22, 5, 30, 6, 40)},
		// The local cache covers what it covers.
		{20, eps(3, 20, 4, 22), eps(2, 6, 3, 15, 4, 22)},
		{40, nil, eps(2, 6, 3, 15, 4, 22, 5, 30)},
	} {
		if got := view(c.localStart).LeaderEpochs(c.local); !slices.Equal(got, c.want) {
			t.Errorf("local start %d, local %v: %v, want %v", c.localStart, c.local, got, c.want)
		}
	}
	if got := (View{local: fixedStart(10)}).LeaderEpochs(eps(2, 10)); !slices.Equal(got, eps(2, 10)) {
		t.Errorf("not tiered: %v", got)
	}
}

type fixedStart int64

func (f fixedStart) LogStartOffset() int64 { return int64(f) }

func appendCRC(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}
