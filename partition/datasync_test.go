package partition

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// dataSync syncs an open file and reports a closed one's error.
func TestDataSync(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	if err := dataSync(f); err != nil {
		t.Fatalf("dataSync: %v", err)
	}
	f.Close()
	if err := dataSync(f); err == nil {
		t.Fatal("dataSync of a closed file: no error")
	}
}

// BenchmarkSyncAppend4K: what this disk takes to make a 4 KiB append
// durable, with fdatasync (dataSync, the every-append policy's) and with
// fsync: p50, p90, p99 per append, in ms. Run it with -benchtime 2000x in
// the directory the nodes use (TMPDIR).
func BenchmarkSyncAppend4K(b *testing.B) {
	for _, mode := range []string{"fdatasync", "fsync"} {
		b.Run(mode, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "f"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := make([]byte, 4096)
			var lat []time.Duration
			off := int64(0)
			for b.Loop() {
				t := time.Now()
				if _, err := f.WriteAt(buf, off); err != nil {
					b.Fatal(err)
				}
				off += int64(len(buf))
				if mode == "fsync" {
					err = f.Sync()
				} else {
					err = dataSync(f)
				}
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
			}
			slices.Sort(lat)
			at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))]) / 1e6 }
			b.ReportMetric(at(0.5), "p50_ms")
			b.ReportMetric(at(0.9), "p90_ms")
			b.ReportMetric(at(0.99), "p99_ms")
		})
	}
}
