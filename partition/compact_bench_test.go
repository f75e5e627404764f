package partition

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkClean measures a full cleaning of a never-cleaned log beside a
// baseline over the same bytes in the same run: Open walking every segment
// (read, CRC, index rebuild), which is what reading the log costs. Each
// round restores the uncleaned files first (not timed). Reported: MB/s of
// each and ratio = clean time / walk time.
//
//	go test -run='^$' -bench=BenchmarkClean -benchtime=5x ./partition/
func BenchmarkClean(b *testing.B) {
	for _, keys := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			benchClean(b, keys)
		})
	}
}

func benchClean(b *testing.B, keys int) {
	cfg := DefaultConfig()
	cfg.Compact = true
	cfg.RetentionAge, cfg.RetentionBytes = -1, -1
	cfg.SegmentBytes = 1 << 20
	dir := filepath.Join(b.TempDir(), "log")
	l, err := Open(dir, cfg)
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 100)
	for i := 0; l.Size() < 16<<20; i++ {
		recs := make([]kv, 10)
		for j := range recs {
			recs[j] = kv{key: fmt.Appendf(nil, "key-%06d", (i*10+j)%keys), value: value}
		}
		mustAppend(b, l, keyedBatch(b, int64(i), false, recs), -1)
	}
	l.Close()
	files := snapshotDir(b, dir)
	delete(files, recoveryPointFile) // Open walks every segment
	var size int64
	for name, f := range files {
		if _, ok := parseSegmentName(name); ok {
			size += int64(len(f))
		}
	}
	b.SetBytes(size)
	b.ResetTimer()
	var tWalk, tClean time.Duration
	var after int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		restoreDir(b, dir, files, nil)
		b.StartTimer()
		start := time.Now()
		l, err := Open(dir, cfg)
		if err != nil {
			b.Fatal(err)
		}
		tWalk += time.Since(start)
		start = time.Now()
		if _, err := l.Clean(l.EndOffset(), 64<<20); err != nil {
			b.Fatal(err)
		}
		tClean += time.Since(start)
		after = l.Size()
		l.Close()
	}
	mb := float64(size) * float64(b.N) / 1e6
	b.ReportMetric(mb/tWalk.Seconds(), "walk-MB/s")
	b.ReportMetric(mb/tClean.Seconds(), "clean-MB/s")
	b.ReportMetric(tClean.Seconds()/tWalk.Seconds(), "ratio")
	b.ReportMetric(float64(after)/float64(size), "size-after/before")
}
