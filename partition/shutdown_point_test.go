package partition

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// damageLastByte flips the last byte of the first segment, inside the last
// batch's records: only a walk (its CRC check) can see it.
func damageLastByte(t *testing.T, dir string) {
	t.Helper()
	path := segmentName(dir, 0, logSuffix)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// openReporting opens dir with point as its shutdown point and returns the
// log and how many cuts recovery reported: none from a log trusted without
// a walk, even with a damaged tail.
func openReporting(t *testing.T, dir string, point *ShutdownPoint) (*Log, *int) {
	t.Helper()
	cfg := testConfig()
	cuts := new(int)
	cfg.OnCorruption = func(Corruption) { *cuts++ }
	cfg.ShutdownPoint = point
	return openLog(t, dir, cfg), cuts
}

// TestCloseForShutdownReturnsWhatCloseWrote: the point CloseForShutdown
// returns is the clean recovery point Close writes, the log's own file is
// left as it was (so an idle log's close writes nothing), and a reopen
// with the point trusts the log without a walk, while one without it walks
// the tail its own recovery point does not vouch for.
func TestCloseForShutdownReturnsWhatCloseWrote(t *testing.T) {
	dir := t.TempDir()
	l, _ := openReporting(t, dir, nil)
	for i := range 3 {
		mustAppend(t, l, makeBatch(int64(i), []byte("record")), 1)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, makeBatch(3, []byte("after the flush")), 1)
	own := readRecoveryPoint(dir)
	p, err := l.CloseForShutdown()
	if err != nil {
		t.Fatal(err)
	}
	size := fileSize(t, segmentName(dir, 0, logSuffix))
	if p.Offset != 4 || p.CleanBase != 0 || p.CleanSize != size {
		t.Fatalf("shutdown point %+v, want offset 4, clean base 0, size %d", p, size)
	}
	if got := readRecoveryPoint(dir); got != own || got.CleanBase != -1 || got.Offset != 3 {
		t.Fatalf("the log's own recovery point is %+v after CloseForShutdown, want it untouched at %+v (offset 3, not clean)", got, own)
	}

	damageLastByte(t, dir)
	p.Written = time.Now()
	l, cuts := openReporting(t, dir, &p)
	if *cuts != 0 || l.EndOffset() != 4 {
		t.Fatalf("opened with the shutdown point: %d cuts, end %d; want no walk (0 cuts) and end 4", *cuts, l.EndOffset())
	}
	if again, err := l.CloseForShutdown(); err != nil || again.Offset != p.Offset || again.CleanSize != p.CleanSize {
		t.Fatalf("closing the unchanged log again: %+v, %v", again, err)
	}

	l, cuts = openReporting(t, dir, nil)
	defer l.Close()
	if *cuts != 1 || l.EndOffset() != 3 {
		t.Fatalf("opened without the shutdown point: %d cuts, end %d; want the tail walked and the damaged batch cut (1 cut, end 3)", *cuts, l.EndOffset())
	}
}

// TestStaleShutdownPointIsNotTrusted: a point the log no longer matches,
// or older than the log's own recovery point, is ignored: the log walks
// its tail as without one.
func TestStaleShutdownPointIsNotTrusted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stale func(p *ShutdownPoint, dir string)
	}{
		{"size differs", func(p *ShutdownPoint, _ string) { p.CleanSize-- }},
		{"end differs", func(p *ShutdownPoint, _ string) { p.Offset++ }},
		{"another last segment", func(p *ShutdownPoint, _ string) { p.CleanBase = 1 }},
		{"older than the log's own recovery point", func(p *ShutdownPoint, dir string) {
			st, err := os.Stat(filepath.Join(dir, recoveryPointFile))
			if err != nil {
				t.Fatal(err)
			}
			p.Written = st.ModTime().Add(-time.Second)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := openReporting(t, dir, nil)
			mustAppend(t, l, makeBatch(0, []byte("flushed")), 1)
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			mustAppend(t, l, makeBatch(1, []byte("not flushed")), 1)
			p, err := l.CloseForShutdown()
			if err != nil {
				t.Fatal(err)
			}
			p.Written = time.Now()
			tc.stale(&p, dir)
			damageLastByte(t, dir)
			l, cuts := openReporting(t, dir, &p)
			defer l.Close()
			if *cuts != 1 || l.EndOffset() != 1 {
				t.Fatalf("%d cuts, end %d; want the tail walked and its damaged batch cut (1 cut, end 1)", *cuts, l.EndOffset())
			}
		})
	}
}

// TestCrashAfterShutdownPointOpen: a log opened with its shutdown point,
// appended to, then killed (no close), recovers every whole batch, with or
// without the point (a node that removed its file, or one that failed to),
// and cuts a torn tail either way.
func TestCrashAfterShutdownPointOpen(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	l, _ := openReporting(t, src, nil)
	for i := range 3 {
		mustAppend(t, l, makeBatch(int64(i), []byte("before the stop")), 1)
	}
	p, err := l.CloseForShutdown()
	if err != nil {
		t.Fatal(err)
	}
	p.Written = time.Now()
	l, _ = openReporting(t, src, &p)
	mustAppend(t, l, makeBatch(3, []byte("after the restart")), 2)
	mustAppend(t, l, makeBatch(4, []byte("the last")), 2)
	crashed := snapshotDir(t, src) // as kill -9 leaves it: no close
	l.Close()

	for _, tc := range []struct {
		name    string
		point   *ShutdownPoint
		damage  bool
		wantEnd int64
	}{
		{"without the point", nil, false, 5},
		{"with the stale point", &p, false, 5},
		{"without the point, torn tail", nil, true, 4},
		{"with the stale point, torn tail", &p, true, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p")
			restoreDir(t, dir, crashed, nil)
			if tc.damage {
				damageLastByte(t, dir)
			}
			var point *ShutdownPoint
			if tc.point != nil {
				cp := *tc.point
				cp.Written = time.Now()
				point = &cp
			}
			l, cuts := openReporting(t, dir, point)
			defer l.Close()
			wantCuts := 0
			if tc.damage {
				wantCuts = 1
			}
			if l.EndOffset() != tc.wantEnd || *cuts != wantCuts {
				t.Fatalf("end %d, %d cuts; want end %d, %d cuts", l.EndOffset(), *cuts, tc.wantEnd, wantCuts)
			}
			if got := l.LeaderEpochs(); len(got) != 2 || got[1] != (EpochEntry{Epoch: 2, StartOffset: 3}) {
				t.Errorf("leader epochs %v, want epoch 2 from offset 3", got)
			}
		})
	}
}
