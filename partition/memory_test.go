package partition

import (
	"flag"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
)

var manyPartitions = flag.Bool("many", false, "open 10,000 partitions in TestIdlePartitionMemory (default 300)")

// idlePartitionBytes opens n logs sharing one FileCache, appends a batch to
// each, closes nothing, and returns the heap bytes each costs once idle.
func idlePartitionBytes(t testing.TB, root string, n int) (perPartition float64, openFiles int) {
	files := NewFileCache(256)
	cfg := DefaultConfig()
	cfg.Files = files
	batch := makeBatch(1, []byte("value"))
	logs := make([]*Log, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()
	for i := range logs {
		l, err := Open(filepath.Join(root, fmt.Sprintf("topic-%d", i)), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(append([]byte(nil), batch...), -1); err != nil {
			t.Fatal(err)
		}
		logs[i] = l
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if g := runtime.NumGoroutine(); g > goroutines {
		t.Errorf("%d goroutines for %d idle partitions (was %d)", g, n, goroutines)
	}
	openFiles = files.OpenFiles()
	per := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
	runtime.KeepAlive(logs)
	for _, l := range logs {
		l.Close()
	}
	return per, openFiles
}

// Issue 6's goal: an idle partition costs at most 16 KiB, and open files
// stay bounded by the shared FileCache.
func TestIdlePartitionMemory(t *testing.T) {
	n := 300
	if *manyPartitions {
		n = 10000
	}
	per, open := idlePartitionBytes(t, t.TempDir(), n)
	t.Logf("%d idle partitions: %.0f heap bytes each, %d files open", n, per, open)
	if per > 16<<10 {
		t.Fatalf("%.0f bytes per idle partition, goal <= 16 KiB", per)
	}
	if open > 256 {
		t.Fatalf("%d files open, bound 256", open)
	}
}

// BenchmarkIdlePartitionMemory reports heap bytes per idle partition with
// 10,000 partitions open (run with -benchtime=1x).
func BenchmarkIdlePartitionMemory(b *testing.B) {
	for i := 0; i < b.N; i++ {
		per, _ := idlePartitionBytes(b, b.TempDir(), 10000)
		b.ReportMetric(per, "bytes/partition")
	}
}
