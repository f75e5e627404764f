package tier_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/tier"
	"github.com/spool-log/spool/node/tier/tiertest"
	"github.com/spool-log/spool/partition"
)

// TestTierThroughputRatios is issue 30's benchmark, in one run against a
// real SeaweedFS on loopback: consuming a range from the store cold (an
// empty chunk cache) and warm (cached) as ratios of consuming the same
// range from local segments, and upload throughput as a ratio of the
// store's own PUT throughput, measured here with segment-sized objects put
// one after another as the uploader puts them. It runs by default at 4 MiB
// (a few seconds); SPOOL_TIER_BENCH_MB=64 (or more) gives steadier figures.
// It reports; it asserts only that every byte read back is the log's.
func TestTierThroughputRatios(t *testing.T) {
	mb := 4
	if v := os.Getenv("SPOOL_TIER_BENCH_MB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SPOOL_TIER_BENCH_MB=%q: want a positive integer", v)
		}
		mb = n
	}
	const segBytes = 1 << 20
	sw := tiertest.Start(t)
	store := sw.Store(t, "bench/")
	dir := t.TempDir()
	cfg := partition.DefaultConfig()
	cfg.SegmentBytes = segBytes
	cfg.RetentionAge, cfg.RetentionBytes = -1, -1
	lg, err := partition.Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	m, err := tier.OpenManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.SetTiered(true)
	rep := replica.New(lg, replica.Config{Self: 1, Replicas: []int32{1}, Remote: m})
	val := bytes.Repeat([]byte("v"), 1000)
	for i := 0; i < mb<<10; i++ {
		if _, err := rep.Append(recordbatch.Simple(time.Now().UnixMilli(), val)); err != nil {
			t.Fatal(err)
		}
	}
	closed := lg.ClosedSegments()
	end := closed[len(closed)-1].Next
	var segTotal int64
	for _, s := range closed {
		segTotal += s.Size
	}
	ctx := context.Background()
	mbps := func(n int64, d time.Duration) float64 { return float64(n) / d.Seconds() / (1 << 20) }

	// The store's own PUT throughput: the closed segments' bytes as
	// segment-sized objects, one at a time.
	seg, err := os.ReadFile(closed[0].LogPath)
	if err != nil {
		t.Fatal(err)
	}
	seg = seg[:closed[0].Size]
	// One put first, untimed: the store's first request sets up what the
	// rest reuse (the connection, the bucket's volume).
	if err := store.Put(ctx, "bench/put/warm", bytes.NewReader(seg), int64(len(seg))); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range closed {
		if err := store.Put(ctx, fmt.Sprintf("bench/put/%d", i), bytes.NewReader(seg), int64(len(seg))); err != nil {
			t.Fatal(err)
		}
	}
	put := mbps(int64(len(seg))*int64(len(closed)), time.Since(start))

	p := &tier.Partition{Topic: "bench", Index: 0, Source: rep, Manifest: m}
	layout := tier.Layout{Prefix: "bench/"}
	u := tier.NewUploader(tier.DefaultUploaderConfig(), store, layout, func() []*tier.Partition { return []*tier.Partition{p} }, quietLog(), nil)
	start = time.Now()
	for m.End() < end {
		u.Pass(ctx)
		if time.Since(start) > 5*time.Minute {
			t.Fatalf("uploaded to %d of %d in 5 minutes", m.End(), end)
		}
	}
	upload := mbps(segTotal, time.Since(start))

	// Each read walks [0, end) in fetch-sized reads and copies the bytes
	// out, as a consumer's fetches would be sent.
	const fetchBytes = 1 << 20
	readAll := func(read func(off int64) (*partition.Slice, error)) (float64, []byte) {
		t.Helper()
		var all []byte
		start := time.Now()
		for off := int64(0); off < end; {
			sl, err := read(off)
			if err != nil {
				t.Fatalf("read at %d: %v", off, err)
			}
			all = append(all, sliceBytes(t, sl)...)
			off = sl.Next
			sl.Release()
		}
		return mbps(int64(len(all)), time.Since(start)), all
	}
	readLocal := func(off int64) (*partition.Slice, error) { return lg.Read(off, fetchBytes, end) }
	readAll(readLocal) // untimed: the local segments into the page cache, as the chunk cache's warm read has them
	local, want := readAll(readLocal)
	cache, err := tier.NewCache(tier.CacheConfig{Dir: filepath.Join(t.TempDir(), "cache"), MaxBytes: 2 * segTotal, ChunkBytes: 4 << 20}, store)
	if err != nil {
		t.Fatal(err)
	}
	rd := tier.NewReader(cache, layout)
	remote := func(off int64) (*partition.Slice, error) { return rd.Read(ctx, "bench", 0, m, off, fetchBytes, end) }
	cold, got := readAll(remote)
	if !bytes.Equal(got, want) {
		t.Fatalf("cold read from the store: %d bytes differ from the local %d", len(got), len(want))
	}
	warm, got := readAll(remote)
	if !bytes.Equal(got, want) {
		t.Fatalf("warm read from the store: %d bytes differ from the local %d", len(got), len(want))
	}
	t.Logf("%d MiB in %d segments: local read %.0f MiB/s; from the store cold %.0f MiB/s (%.2fx local), warm %.0f MiB/s (%.2fx local); "+
		"upload %.0f MiB/s, the store's PUT %.0f MiB/s (upload %.2fx PUT)",
		segTotal>>20, len(closed), local, cold, cold/local, warm, warm/local, upload, put, upload/put)
}
