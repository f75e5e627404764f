package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/recordbatch"
)

// corruptLayout is a log of four segments of four equal batches each, the
// last segment active, with one offset index entry per segment, at its
// fourth batch: Open's cheap load of a trusted segment reads only the
// headers from there, so damage to a segment's second batch is seen at Open
// only by a recovery walk.
type corruptLayout struct {
	bases   []int64           // segment base offsets
	batches [][]batchAt       // per segment, every batch's position and header
	files   map[string][]byte // the log directory after a clean close
	crashed map[string][]byte // the same log as a crash after a flush leaves it
	end     int64
}

const corruptSegs, corruptBatches = 4, 4

func buildCorruptLayout(t *testing.T, cfg Config) corruptLayout {
	t.Helper()
	probe := sizedBatch(0, 2, 40)
	sz := len(probe)
	cfg.SegmentBytes = int64(corruptBatches*sz + sz/2)
	cfg.IndexIntervalBytes = 3 * sz
	dir := filepath.Join(t.TempDir(), "orders-0")
	l := openLog(t, dir, cfg)
	for i := 0; i < corruptSegs*corruptBatches; i++ {
		mustAppend(t, l, sizedBatch(int64(1000+i), 2, 40), 1)
	}
	if l.SegmentCount() != corruptSegs {
		t.Fatalf("%d segments, want %d", l.SegmentCount(), corruptSegs)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	lay := corruptLayout{crashed: snapshotDir(t, dir), end: l.EndOffset()}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	lay.files = snapshotDir(t, dir)
	for i := 0; i < corruptSegs; i++ {
		base := int64(i * corruptBatches * 2)
		lay.bases = append(lay.bases, base)
		b := lay.files[segName(base)]
		var bs []batchAt
		for pos := 0; pos < len(b); {
			h, err := ParseBatchHeader(b[pos:])
			if err != nil {
				t.Fatal(err)
			}
			bs = append(bs, batchAt{pos: pos, h: h})
			pos += int(h.Size())
		}
		if len(bs) != corruptBatches || bs[0].h.BaseOffset != base {
			t.Fatalf("segment %d: %d batches from %d", base, len(bs), bs[0].h.BaseOffset)
		}
		idx := lay.files[strings.TrimSuffix(segName(base), logSuffix)+offsetSuffix]
		if len(idx) != offsetEntrySize || int(binary.BigEndian.Uint32(idx[4:])) != bs[3].pos {
			t.Fatalf("segment %d: index %x, want one entry at the fourth batch (%d)", base, idx, bs[3].pos)
		}
		lay.batches = append(lay.batches, bs)
	}
	return lay
}

func segName(base int64) string { return fmt.Sprintf("%020d", base) + logSuffix }

// damageKind is what a damaged byte broke.
type damageKind string

const (
	damageLength  damageKind = "length"  // batchLength set past the segment's end
	damageCRC     damageKind = "crc"     // a byte of the CRC field flipped
	damagePayload damageKind = "payload" // the batch's last byte flipped
)

func damageBatch(b []byte, at batchAt, kind damageKind) {
	switch kind {
	case damageLength:
		binary.BigEndian.PutUint32(b[at.pos+recordbatch.OffLength:], 0x7fffffff)
	case damageCRC:
		b[at.pos+offCRC+1] ^= 0x40
	case damagePayload:
		b[at.pos+int(at.h.Size())-1] ^= 0x01
	}
}

// TestRecoveryQuarantinesDamage combines every state of the checkpoint files
// (clean, after a crash, recovery point or leader-epoch file missing or
// garbage) with a damaged byte (length field, CRC, payload) in a sealed
// segment, in the active one, or in both, and asserts exactly: what Open
// cuts and moves, what lands in quarantine under which name with which
// bytes, what it reports, which offsets Read serves (and that a 1 MiB read
// from 0 returns every whole batch before the first unreadable one), and
// what a scrub then finds and refuses.
func TestRecoveryQuarantinesDamage(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 30, 21, 15, 0, 0, time.UTC)}
	cfg := testConfig()
	cfg.Clock = clock.Now
	lay := buildCorruptLayout(t, cfg)
	cfg.SegmentBytes = int64(corruptBatches*lay.batches[0][0].h.Size()) + lay.batches[0][0].h.Size()/2
	cfg.IndexIntervalBytes = int(3 * lay.batches[0][0].h.Size())
	stamp := "20261130T211500Z"

	type state struct {
		name    string
		crashed bool // the crash snapshot: the active segment is walked
		walkAll bool // every segment is walked
		edit    func(files map[string][]byte)
	}
	states := []state{
		{name: "clean"},
		{name: "crash", crashed: true},
		{name: "recovery-point-missing", walkAll: true, edit: func(f map[string][]byte) { delete(f, recoveryPointFile) }},
		{name: "recovery-point-garbage", walkAll: true, edit: func(f map[string][]byte) { f[recoveryPointFile] = []byte("0\nnot a number\n") }},
		{name: "leader-epoch-missing", walkAll: true, edit: func(f map[string][]byte) { delete(f, leaderEpochFile) }},
		{name: "leader-epoch-garbage", walkAll: true, edit: func(f map[string][]byte) { f[leaderEpochFile] = []byte("0\n1\n1 x\n") }},
		{name: "crash-and-epoch-missing", crashed: true, walkAll: true, edit: func(f map[string][]byte) { delete(f, leaderEpochFile) }},
	}
	locations := map[string][]int{"sealed": {1}, "active": {3}, "across": {1, 3}}

	for _, st := range states {
		for _, kind := range []damageKind{damageLength, damageCRC, damagePayload} {
			for _, locName := range []string{"sealed", "active", "across"} {
				damaged := locations[locName]
				t.Run(st.name+"/"+string(kind)+"/"+locName, func(t *testing.T) {
					base := t.TempDir()
					dir := filepath.Join(base, "orders-0")
					qdir := filepath.Join(base, "quarantine")
					files := lay.files
					if st.crashed {
						files = lay.crashed
					}
					files = cloneFiles(files)
					if st.edit != nil {
						st.edit(files)
					}
					for _, k := range damaged {
						damageBatch(files[segName(lay.bases[k])], lay.batches[k][1], kind)
					}
					orig := cloneFiles(files) // the damaged bytes, as Open finds them
					restoreDir(t, dir, files, nil)

					// The model: a walked segment is cut at its damaged batch
					// (the second), and every later segment is moved out.
					walked := func(k int) bool { return st.walkAll || (st.crashed && k == corruptSegs-1) }
					cutSeg := -1
					for _, k := range damaged {
						if walked(k) {
							cutSeg = k
							break
						}
					}
					var wantReports []Corruption
					wantQ := map[string][]byte{}
					keptSegs := corruptSegs
					if cutSeg >= 0 {
						keptSegs = cutSeg + 1
						at := lay.batches[cutSeg][1]
						name := segName(lay.bases[cutSeg])
						qpath := filepath.Join(qdir, stamp+"-orders-0-"+name+".tail")
						wantQ[filepath.Base(qpath)] = orig[name][at.pos:]
						end := lay.batches[cutSeg][3].h.LastOffset() + 1
						reason := "corrupt record batch at byte 17: crc"
						if kind == damageLength {
							end = at.h.LastOffset() + 1
							reason = "batch length 2147483647 does not fit"
						}
						wantReports = append(wantReports, Corruption{Segment: filepath.Join(dir, name), Position: int64(at.pos),
							Offset: at.h.BaseOffset, EndOffset: end, Bytes: int64(len(orig[name]) - at.pos), Reason: reason, Quarantine: qpath})
						for k := cutSeg + 1; k < corruptSegs; k++ {
							name := segName(lay.bases[k])
							qpath := filepath.Join(qdir, stamp+"-orders-0-"+name)
							wantQ[filepath.Base(qpath)] = orig[name]
							end := lay.batches[k][3].h.LastOffset() + 1
							if kind == damageLength && slices.Contains(damaged, k) {
								end = lay.batches[k][1].h.LastOffset() + 1
							}
							wantReports = append(wantReports, Corruption{Segment: filepath.Join(dir, name), Offset: lay.bases[k], EndOffset: end,
								Bytes: int64(len(orig[name])), Reason: "follows segment " + segName(lay.bases[cutSeg]) + ", which now ends before offset " + fmt.Sprint(at.h.BaseOffset), Quarantine: qpath})
						}
					}

					var reports []Corruption
					c := cfg
					c.QuarantineDir = qdir
					c.OnCorruption = func(r Corruption) { reports = append(reports, r) }
					l := openLog(t, dir, c)
					defer l.Close()

					if len(reports) != len(wantReports) {
						t.Fatalf("reports %v, want %v", reports, wantReports)
					}
					for i, r := range reports {
						w := wantReports[i]
						if !strings.HasPrefix(r.Reason, w.Reason) {
							t.Errorf("report %d reason %q, want it to start %q", i, r.Reason, w.Reason)
						}
						r.Reason = w.Reason
						if r != w {
							t.Errorf("report %d:\n got %+v\nwant %+v", i, r, w)
						}
					}
					gotQ := map[string][]byte{}
					if entries, err := os.ReadDir(qdir); err == nil {
						for _, e := range entries {
							gotQ[e.Name()] = mustRead(t, filepath.Join(qdir, e.Name()))
						}
					}
					if len(gotQ) != len(wantQ) {
						t.Fatalf("quarantine holds %v, want %v", keys(gotQ), keys(wantQ))
					}
					for n, w := range wantQ {
						if !bytes.Equal(gotQ[n], w) {
							t.Errorf("quarantine %s: %d bytes, want the %d cut", n, len(gotQ[n]), len(w))
						}
					}

					// What stays in the directory: the segments before the cut
					// whole, the cut one up to its damaged batch, none after.
					wantEnd := lay.end
					if cutSeg >= 0 {
						wantEnd = lay.batches[cutSeg][1].h.BaseOffset
					}
					if l.EndOffset() != wantEnd || l.SegmentCount() != keptSegs {
						t.Fatalf("end %d, %d segments; want %d, %d", l.EndOffset(), l.SegmentCount(), wantEnd, keptSegs)
					}
					for k := 0; k < corruptSegs; k++ {
						name := segName(lay.bases[k])
						got, err := os.ReadFile(filepath.Join(dir, name))
						switch {
						case k > cutSeg && cutSeg >= 0:
							if !errors.Is(err, os.ErrNotExist) {
								t.Errorf("segment %s still in the log: %v", name, err)
							}
						case k == cutSeg:
							if !bytes.Equal(got, orig[name][:lay.batches[k][1].pos]) {
								t.Errorf("segment %s: %d bytes, want its first batch's %d", name, len(got), lay.batches[k][1].pos)
							}
						default:
							if !bytes.Equal(got, orig[name]) {
								t.Errorf("segment %s changed", name)
							}
						}
					}

					// Reads. A batch left damaged in a segment Open did not
					// walk: a bad length cannot be read past, so a read at it
					// or at the batch after it (located only by walking from
					// the segment's start; the index entry is at the fourth)
					// fails; a bad CRC is served until a scrub finds it.
					unreadable := func(k, j int, scrubbed bool) bool {
						if !slices.Contains(damaged, k) || walked(k) || (cutSeg >= 0 && k > cutSeg) {
							return false
						}
						if kind == damageLength {
							return j == 1 || j == 2
						}
						return scrubbed && k < corruptSegs-1 && j == 1
					}
					checkReads := func(scrubbed bool) {
						t.Helper()
						var wantAll []byte // a 1 MiB read from 0
						stopped := false
						for k := 0; k < keptSegs; k++ {
							for j, at := range lay.batches[k] {
								if at.h.BaseOffset >= wantEnd {
									break
								}
								want := orig[segName(lay.bases[k])][at.pos : at.pos+int(at.h.Size())]
								stopped = stopped || (unreadable(k, j, scrubbed) && j == 1)
								if !stopped {
									wantAll = append(wantAll, want...)
								}
								for off := at.h.BaseOffset; off <= at.h.LastOffset(); off++ {
									s, err := l.Read(off, 1, wantEnd)
									if unreadable(k, j, scrubbed) {
										if !errors.Is(err, ErrCorrupt) {
											t.Fatalf("read %d (segment %d batch %d): %v, want ErrCorrupt", off, k, j, err)
										}
										continue
									}
									if err != nil {
										t.Fatalf("read %d (segment %d batch %d): %v", off, k, j, err)
									}
									got := readAll(t, s)
									s.Release()
									if !bytes.Equal(got, want) {
										t.Fatalf("read %d (segment %d batch %d): %d bytes, not the batch's %d", off, k, j, len(got), len(want))
									}
								}
							}
						}
						s, err := l.Read(0, 1<<20, wantEnd)
						if err != nil {
							t.Fatalf("read 0, 1 MiB: %v", err)
						}
						got := readAll(t, s)
						s.Release()
						if !bytes.Equal(got, wantAll) {
							t.Fatalf("read 0, 1 MiB: %d bytes, want the %d before the first damaged batch", len(got), len(wantAll))
						}
					}
					checkReads(false)

					// A scrub walks the sealed segments left and finds the
					// damage Open did not walk, and refuses reads of it.
					var wantFound []Corruption
					for k := 0; k < keptSegs-1; k++ {
						if !slices.Contains(damaged, k) || walked(k) {
							continue
						}
						at := lay.batches[k][1]
						name := segName(lay.bases[k])
						w := Corruption{Segment: filepath.Join(dir, name), Position: int64(at.pos), Offset: at.h.BaseOffset,
							EndOffset: at.h.LastOffset() + 1, Bytes: at.h.Size(), Reason: "corrupt record batch at byte 17: crc"}
						if kind == damageLength {
							w.EndOffset, w.Bytes, w.Reason = -1, int64(len(orig[name])-at.pos), "batch length 2147483647 does not fit"
						}
						wantFound = append(wantFound, w)
					}
					var paced int64
					res, err := l.Scrub(func(n int64) error { paced += n; return nil })
					if err != nil {
						t.Fatal(err)
					}
					var sealedBytes int64
					for k := 0; k < keptSegs-1; k++ {
						sealedBytes += int64(len(orig[segName(lay.bases[k])]))
						if kind == damageLength && slices.Contains(damaged, k) && !walked(k) {
							sealedBytes -= int64(len(orig[segName(lay.bases[k])]) - lay.batches[k][1].pos - BatchHeaderSize)
						}
					}
					if res.Segments != keptSegs-1 || res.Bytes != sealedBytes || paced != sealedBytes {
						t.Errorf("scrub walked %d segments, %d bytes (paced %d); want %d, %d", res.Segments, res.Bytes, paced, keptSegs-1, sealedBytes)
					}
					if len(res.Corrupt) != len(wantFound) {
						t.Fatalf("scrub found %v, want %v", res.Corrupt, wantFound)
					}
					for i, f := range res.Corrupt {
						w := wantFound[i]
						if !strings.HasPrefix(f.Reason, w.Reason) {
							t.Errorf("finding %d reason %q, want it to start %q", i, f.Reason, w.Reason)
						}
						f.Reason = w.Reason
						if f != w {
							t.Errorf("finding %d:\n got %+v\nwant %+v", i, f, w)
						}
					}
					if got := l.KnownCorrupt(); len(got) != len(wantFound) {
						t.Errorf("KnownCorrupt %v, want %d", got, len(wantFound))
					}
					checkReads(true)
				})
			}
		}
	}
}

func cloneFiles(in map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(in))
	for n, b := range in {
		out[n] = append([]byte(nil), b...)
	}
	return out
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
