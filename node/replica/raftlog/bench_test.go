package raftlog

import (
	"runtime"
	"testing"

	"github.com/spool-log/spool/partition"
	pb "go.etcd.io/raft/v3/raftpb"
)

// benchLog opens a log with the default 1 GiB segments and no retention.
func benchLog(b *testing.B, dir string) *partition.Log {
	cfg := partition.DefaultConfig()
	cfg.RetentionAge = -1
	l, err := partition.Open(dir, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

// BenchmarkAppend appends 64 one-record entries per call, as one Ready of a
// busy partition brings, without fsync (the flush policy's business).
func BenchmarkAppend(b *testing.B) {
	l := benchLog(b, b.TempDir())
	defer l.Close()
	s := openStorage(b, l, Options{})
	batch := recordBatch("a value of some thirty-two bytes")
	next := uint64(1)
	b.SetBytes(int64(64 * len(batch)))
	for b.Loop() {
		ents := make([]*pb.Entry, 64)
		for k := range ents {
			ents[k] = entry(next, 1, pb.EntryNormal, batch)
			next++
		}
		if err := s.Append(ents); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen rebuilds the index map of a log of 100,000 entries, and
// reports the map's bytes per entry.
func BenchmarkOpen(b *testing.B) {
	dir := b.TempDir()
	l := benchLog(b, dir)
	s := openStorage(b, l, Options{})
	batch := recordBatch("v")
	const n = 100_000
	for i := uint64(1); i <= n; i += 1000 {
		ents := make([]*pb.Entry, 1000)
		for k := range ents {
			ents[k] = entry(i+uint64(k), 1+(i+uint64(k))/30_000, pb.EntryNormal, batch)
		}
		if err := s.Append(ents); err != nil {
			b.Fatal(err)
		}
	}
	l.Close()
	l = benchLog(b, dir)
	defer l.Close()
	var before, after runtime.MemStats
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		s = openStorage(b, l, Options{})
		runtime.GC()
		runtime.ReadMemStats(&after)
		if last, _ := s.LastIndex(); last != n {
			b.Fatalf("last index %d", last)
		}
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heapB/entry")
	runtime.KeepAlive(s)
}
