package tier_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/node/tier"
	"github.com/spool-log/spool/node/tier/tiertest"
	"github.com/spool-log/spool/partition"
)

func sliceBytes(t *testing.T, sl *partition.Slice) []byte {
	t.Helper()
	var out []byte
	for _, r := range sl.Regions {
		b := make([]byte, r.Length)
		if _, err := r.File.ReadAt(b, r.Position); err != nil && err != io.EOF {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// TestReaderServesUploadedRecords: after upload and local retention, every
// record below the local log start reads back from the store in order,
// through a cache bounded far below the data; concurrent cold readers of
// one range share its download.
func TestReaderServesUploadedRecords(t *testing.T) {
	sw := tiertest.Start(t)
	store := sw.Store(t, "r/")
	rep, m, lg := tieredLog(t)
	appendRecords(t, rep, 0, 400)
	p := &tier.Partition{Topic: "orders", Index: 3, Source: rep, Manifest: m}
	layout := tier.Layout{Prefix: "r/"}
	u := tier.NewUploader(tier.DefaultUploaderConfig(), store, layout, func() []*tier.Partition { return []*tier.Partition{p} }, quietLog(), nil)
	u.Pass(context.Background())
	if _, err := rep.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if lg.StartOffset() == 0 || lg.StartOffset() != m.End() {
		t.Fatalf("local start %d, remote end %d", lg.StartOffset(), m.End())
	}
	cache, err := tier.NewCache(tier.CacheConfig{Dir: filepath.Join(t.TempDir(), "cache"), MaxBytes: 8 << 10, ChunkBytes: 4 << 10}, store)
	if err != nil {
		t.Fatal(err)
	}
	rd := tier.NewReader(cache, layout)
	ctx := context.Background()

	// Concurrent cold readers of offset 0: one download of each chunk.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sl, err := rd.Read(ctx, "orders", 3, m, 0, 1000, 1<<62)
			if err != nil {
				errs <- err
				return
			}
			sl.Release()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if st := cache.Stats(); st.Downloads > 2 {
		t.Fatalf("8 cold readers of one range made %d downloads, want at most 2 (index and log chunk)", st.Downloads)
	}

	next, i := int64(0), 0
	for next < m.End() {
		sl, err := rd.Read(ctx, "orders", 3, m, next, 3000, 1<<62)
		if err != nil {
			t.Fatalf("read at %d: %v", next, err)
		}
		b := sliceBytes(t, sl)
		sl.Release()
		if len(b) == 0 {
			t.Fatalf("empty read at %d", next)
		}
		err = recordbatch.Walk(b, func(batch []byte, h recordbatch.Header) error {
			recs, err := recordbatch.Records(nil, batch, h, nil, 1<<20)
			if err != nil {
				return err
			}
			for _, r := range recs {
				want := fmt.Sprintf("record-%06d-", i)
				if !strings.HasPrefix(string(r.Value), want) || h.BaseOffset != int64(i) {
					return fmt.Errorf("offset %d: %.20q, want %s", h.BaseOffset, r.Value, want)
				}
				i++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		next = sl.Next
	}
	if int64(i) != lg.StartOffset() {
		t.Fatalf("read %d records from the store, local start %d", i, lg.StartOffset())
	}
	if st := cache.Stats(); st.Used > 8<<10 {
		t.Fatalf("cache holds %d bytes, bound %d", st.Used, 8<<10)
	}
	// Below the remote start or past its end: not remote.
	if _, err := rd.Read(ctx, "orders", 3, m, m.End(), 100, 1<<62); err != tier.ErrNotRemote {
		t.Fatalf("read at the remote end: %v", err)
	}
	// By time: the first batch is remote.
	off, _, ok, err := rd.OffsetForTime(ctx, "orders", 3, m, 0)
	if err != nil || !ok || off != 0 {
		t.Fatalf("offset for time 0: %d %v %v", off, ok, err)
	}
}
