package partition

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func snapshotDir(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

func restoreDir(t testing.TB, dir string, files map[string][]byte, edit func(name string, b []byte) []byte) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		b = append([]byte(nil), b...)
		if edit != nil {
			b = edit(name, b)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// indexState is a segment's files after some number of appends.
type indexState struct {
	log, index, timeindex []byte
	end                   int64
}

// TestCrashRecoveryEveryByte cuts the log at, and separately corrupts, every
// byte position of the batches written after the last flush, and checks that
// Open keeps exactly the whole valid batches before the damage, with indexes
// byte for byte as appends would have written them.
func TestCrashRecoveryEveryByte(t *testing.T) {
	cfg := testConfig()
	cfg.IndexIntervalBytes = 60
	src := filepath.Join(t.TempDir(), "src")
	l := openLog(t, src, cfg)
	name := func(suffix string) string { return filepath.Base(segmentName(src, 0, suffix)) }
	var states []indexState // states[k]: after k batches
	capture := func() {
		writeIndexes(t, l)
		states = append(states, indexState{
			log:       mustRead(t, filepath.Join(src, name(logSuffix))),
			index:     mustRead(t, filepath.Join(src, name(offsetSuffix))),
			timeindex: mustRead(t, filepath.Join(src, name(timeIndexSuffix))),
			end:       l.EndOffset(),
		})
	}
	capture()
	durable := 6
	for i := 0; i < durable+3; i++ {
		epoch := int32(1)
		if i >= durable+1 {
			epoch = 2 // the last batches carry a new epoch
		}
		ts := int64(1000 + 10*i)
		if i == durable+1 {
			ts = 500 // a late timestamp: the time index must not grow
		}
		mustAppend(t, l, sizedBatch(ts, 1+i%2, 12), epoch)
		capture()
		if i == durable-1 {
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	crashed := snapshotDir(t, src) // as a crash would leave it: no clean close
	l.Close()

	flushed := int64(len(states[durable].log))
	total := int64(len(states[len(states)-1].log))
	// batchesBefore is how many whole batches end at or before p.
	batchesBefore := func(p int64) int {
		k := 0
		for k+1 < len(states) && int64(len(states[k+1].log)) <= p {
			k++
		}
		return k
	}
	check := func(t *testing.T, dir, what string, p int64, want int, onDisk []byte) {
		t.Helper()
		ws := states[want]
		// What recovery cuts is kept in quarantine, byte for byte, and
		// reported; a log cut at a batch boundary loses nothing.
		qdir := filepath.Join(filepath.Dir(dir), "quarantine")
		os.RemoveAll(qdir)
		c := cfg
		c.QuarantineDir = qdir
		var reports []Corruption
		c.OnCorruption = func(r Corruption) { reports = append(reports, r) }
		rl, err := Open(dir, c)
		if err != nil {
			t.Fatalf("%s at %d: open: %v", what, p, err)
		}
		defer rl.Close()
		cut := onDisk[len(ws.log):]
		entries, _ := os.ReadDir(qdir)
		switch {
		case len(cut) == 0 && (len(entries) > 0 || len(reports) > 0):
			t.Fatalf("%s at %d: nothing cut, yet quarantine holds %v and reports say %v", what, p, entries, reports)
		case len(cut) > 0 && (len(entries) != 1 || len(reports) != 1):
			t.Fatalf("%s at %d: %d bytes cut, quarantine holds %v, reports %v", what, p, len(cut), entries, reports)
		case len(cut) > 0:
			r := reports[0]
			if r.Quarantine != filepath.Join(qdir, entries[0].Name()) || !strings.HasSuffix(r.Quarantine, "-crash-"+name(logSuffix)+".tail") ||
				r.Position != int64(len(ws.log)) || r.Offset != ws.end || r.Bytes != int64(len(cut)) || r.Reason == "" {
				t.Fatalf("%s at %d: report %+v, want %d bytes cut at %d (offset %d)", what, p, r, len(cut), len(ws.log), ws.end)
			}
			if got := mustRead(t, r.Quarantine); !bytes.Equal(got, cut) {
				t.Fatalf("%s at %d: quarantine holds %d bytes, not the %d cut", what, p, len(got), len(cut))
			}
		}
		if rl.EndOffset() != ws.end {
			t.Fatalf("%s at %d: end offset %d, want %d", what, p, rl.EndOffset(), ws.end)
		}
		for suffix, wantBytes := range map[string][]byte{logSuffix: ws.log, offsetSuffix: ws.index, timeIndexSuffix: ws.timeindex} {
			if got := mustRead(t, filepath.Join(dir, name(suffix))); !bytes.Equal(got, wantBytes) {
				t.Fatalf("%s at %d: %s is %d bytes, want the %d of %d whole batches", what, p, suffix, len(got), len(wantBytes), want)
			}
		}
		for off := int64(0); off < ws.end; off++ {
			s, err := rl.Read(off, 1, ws.end)
			if err != nil {
				t.Fatalf("%s at %d: read %d: %v", what, p, off, err)
			}
			hs := batchesIn(t, readAll(t, s))
			s.Release()
			if len(hs) != 1 || hs[0].BaseOffset > off || hs[0].LastOffset() < off {
				t.Fatalf("%s at %d: read %d gave %+v", what, p, off, hs)
			}
		}
		epochs := rl.LeaderEpochs()
		if want <= durable+1 && len(epochs) != 1 || want > durable+1 && len(epochs) != 2 {
			t.Fatalf("%s at %d: epochs %v after %d batches", what, p, epochs, want)
		}
		if p%8 != 0 {
			return // appending costs fsyncs for the new epoch; a sample suffices
		}
		if info, err := rl.Append(makeBatch(1, []byte("after")), 3); err != nil || info.BaseOffset != ws.end {
			t.Fatalf("%s at %d: append after recovery: %+v, %v", what, p, info, err)
		}
	}
	// Opening costs a few fsyncs; spread the positions over parallel workers.
	const workers = 4
	for w := 0; w < workers; w++ {
		t.Run(fmt.Sprintf("worker%d", w), func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "crash")
			for p := flushed + int64(w); p < total; p += workers {
				var onDisk []byte
				restoreDir(t, dir, crashed, func(n string, b []byte) []byte {
					if n == name(logSuffix) {
						onDisk = b[:p]
						return onDisk
					}
					return b
				})
				check(t, dir, "cut", p, batchesBefore(p), onDisk)

				restoreDir(t, dir, crashed, func(n string, b []byte) []byte {
					if n == name(logSuffix) {
						b[p] ^= 0xff
						onDisk = b
					}
					return b
				})
				// The batch holding p is damaged: keep those wholly before it.
				check(t, dir, "corrupt", p, batchesBefore(p), onDisk)
			}
		})
	}
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A corrupt or missing index of a segment before the recovery point is
// rebuilt from its log, never trusted.
func TestIndexRebuiltWhenCorruptOrMissing(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 2000
	cfg.IndexIntervalBytes = 100
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	for i := 0; i < 20; i++ {
		mustAppend(t, l, sizedBatch(int64(100*i), 2, 60), -1)
	}
	end := l.EndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	good := snapshotDir(t, dir)
	first := filepath.Base(segmentName(dir, 0, offsetSuffix))
	firstTime := filepath.Base(segmentName(dir, 0, timeIndexSuffix))
	if len(good[first]) < 2*offsetEntrySize {
		t.Fatalf("test needs index entries; got %d bytes", len(good[first]))
	}
	damages := map[string]func(n string, b []byte) []byte{
		"garbage entry": func(n string, b []byte) []byte {
			if n == first {
				copy(b[offsetEntrySize:], []byte{0, 0, 0, 1, 0, 0, 0, 3}) // points mid-batch, out of order
			}
			return b
		},
		"torn": func(n string, b []byte) []byte {
			if n == first {
				return b[:len(b)-3]
			}
			return b
		},
		"time index out of order": func(n string, b []byte) []byte {
			if n == firstTime && len(b) >= 2*timeEntrySize {
				copy(b[timeEntrySize:], b[:timeEntrySize])
			}
			return b
		},
	}
	for what, edit := range damages {
		restoreDir(t, dir, good, edit)
		l := openLog(t, dir, cfg)
		if l.EndOffset() != end {
			t.Fatalf("%s: end %d", what, l.EndOffset())
		}
		for off := int64(0); off < end; off++ {
			s, err := l.Read(off, 1, end)
			if err != nil {
				t.Fatalf("%s: read %d: %v", what, off, err)
			}
			hs := batchesIn(t, readAll(t, s))
			s.Release()
			if len(hs) != 1 || hs[0].BaseOffset > off || hs[0].LastOffset() < off {
				t.Fatalf("%s: read %d gave %+v", what, off, hs)
			}
		}
		l.Close()
		if got := mustRead(t, filepath.Join(dir, first)); !bytes.Equal(got, good[first]) {
			t.Fatalf("%s: offset index not rebuilt", what)
		}
		if got := mustRead(t, filepath.Join(dir, firstTime)); !bytes.Equal(got, good[firstTime]) {
			t.Fatalf("%s: time index not rebuilt", what)
		}
	}
	// Missing: both index files of every segment.
	restoreDir(t, dir, good, nil)
	matches, _ := filepath.Glob(filepath.Join(dir, "*index"))
	for _, m := range matches {
		os.Remove(m)
	}
	l = openLog(t, dir, cfg)
	if l.EndOffset() != end {
		t.Fatalf("missing indexes: end %d", l.EndOffset())
	}
	l.Close()
	for n, b := range good {
		if filepath.Ext(n) == offsetSuffix || filepath.Ext(n) == timeIndexSuffix {
			if got := mustRead(t, filepath.Join(dir, n)); !bytes.Equal(got, b) {
				t.Fatalf("missing indexes: %s not rebuilt", n)
			}
		}
	}
}

// Damage in a middle segment after the recovery point cuts the log there,
// since offsets must stay contiguous: the damaged tail and every later
// segment go to quarantine, whole, and are reported (issue 18 4b: they were
// deleted without a word).
func TestRecoveryQuarantinesSegmentsAfterDamage(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 600
	dir := filepath.Join(t.TempDir(), "orders-7")
	l := openLog(t, dir, cfg)
	for i := 0; i < 9; i++ {
		mustAppend(t, l, sizedBatch(int64(i), 2, 90), -1) // ~250 bytes: two per segment
	}
	if l.SegmentCount() != 5 {
		t.Fatalf("%d segments", l.SegmentCount())
	}
	l.Close()
	snap := snapshotDir(t, dir)
	mid := filepath.Base(segmentName(dir, 4, logSuffix)) // segments 0, 4, 8, 12, 16
	restoreDir(t, dir, snap, func(n string, b []byte) []byte {
		switch n {
		case mid:
			b[len(b)-5] ^= 1 // second batch of segment 4
			snap[n] = append([]byte(nil), b...)
		case recoveryPointFile:
			return []byte("0\n0\n-1 -1\n") // as if never flushed
		}
		return b
	})
	var reports []Corruption
	cfg.OnCorruption = func(c Corruption) { reports = append(reports, c) }
	l = openLog(t, dir, cfg) // QuarantineDir unset: the node's layout, beside the partition
	defer l.Close()
	if l.EndOffset() != 6 || l.SegmentCount() != 2 {
		t.Fatalf("end %d, %d segments; want 6, 2", l.EndOffset(), l.SegmentCount())
	}
	qdir := filepath.Join(filepath.Dir(dir), "quarantine")
	second := len(snap[mid]) / 2 // both batches of segment 4 are the same size
	want := []struct {
		file   string
		offset int64
		bytes  []byte
	}{
		{mid + ".tail", 6, snap[mid][second:]},
		{filepath.Base(segmentName(dir, 8, logSuffix)), 8, snap[filepath.Base(segmentName(dir, 8, logSuffix))]},
		{filepath.Base(segmentName(dir, 12, logSuffix)), 12, snap[filepath.Base(segmentName(dir, 12, logSuffix))]},
		{filepath.Base(segmentName(dir, 16, logSuffix)), 16, snap[filepath.Base(segmentName(dir, 16, logSuffix))]},
	}
	if len(reports) != len(want) {
		t.Fatalf("reports %v, want %d", reports, len(want))
	}
	for i, w := range want {
		r := reports[i]
		if filepath.Dir(r.Quarantine) != qdir || !strings.HasSuffix(r.Quarantine, "-orders-7-"+w.file) || r.Offset != w.offset || r.Bytes != int64(len(w.bytes)) {
			t.Errorf("report %d: %+v, want %s from offset %d, %d bytes", i, r, w.file, w.offset, len(w.bytes))
			continue
		}
		if got := mustRead(t, r.Quarantine); !bytes.Equal(got, w.bytes) {
			t.Errorf("%s: %d bytes in quarantine, want %d", r.Quarantine, len(got), len(w.bytes))
		}
	}
	for _, base := range []int64{8, 12, 16} {
		for _, suffix := range []string{logSuffix, offsetSuffix, timeIndexSuffix} {
			if _, err := os.Stat(segmentName(dir, base, suffix)); !os.IsNotExist(err) {
				t.Fatalf("segment %d%s survived in the log: %v", base, suffix, err)
			}
		}
	}
}

// writeIndexes writes the index entries a log still holds in memory, so a
// test can compare index files.
func writeIndexes(t testing.TB, l *Log) {
	t.Helper()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	for _, s := range l.segs {
		if err := l.writePending(s); err != nil {
			t.Fatal(err)
		}
	}
}
