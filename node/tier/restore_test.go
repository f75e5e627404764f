package tier_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/node/tier"
	"github.com/spool-log/spool/node/tier/tiertest"
	"github.com/spool-log/spool/partition"
)

// TestRestoreFromTheStore: a partition uploaded and then lost (its
// directory gone) is restored into an empty one: the manifest is the
// store's copy, the local log starts at the copy's end, and every uploaded
// record reads back from the store in order, at its old offset, through
// the restored partition's View. A partition the store holds nothing for
// starts empty at 0, and a node with no store refuses to restore.
func TestRestoreFromTheStore(t *testing.T) {
	sw := tiertest.Start(t)
	store := sw.Store(t, "rs/")
	rep, m, _ := tieredLog(t)
	appendRecords(t, rep, 0, 300)
	p := &tier.Partition{Topic: "orders", Index: 0, Source: rep, Manifest: m}
	u := tier.NewUploader(tier.DefaultUploaderConfig(), store, tier.Layout{Prefix: "rs/"}, func() []*tier.Partition { return []*tier.Partition{p} }, quietLog(), nil)
	u.Pass(context.Background())
	uploaded := m.End()
	if uploaded == 0 {
		t.Fatal("nothing uploaded")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc, err := tier.New(ctx, sw.Settings(t, "rs/"), t.TempDir(), func() []tier.Hosted { return nil }, quietLog(), nil)
	if err != nil {
		t.Fatal(err)
	}
	open := func() (string, *partition.Log) {
		dir := t.TempDir()
		lg, err := partition.Open(dir, partition.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lg.Close() })
		return dir, lg
	}
	dir, lg := open()
	r, err := svc.Restore(dir, "orders", 0, lg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Found || r.Start != 0 || r.End != uploaded || r.Segments != len(m.Segments()) || r.Bytes != m.Bytes() {
		t.Fatalf("restored %+v, want [0,%d) in %d segments, %d bytes", r, uploaded, len(m.Segments()), m.Bytes())
	}
	if lg.StartOffset() != uploaded || lg.EndOffset() != uploaded {
		t.Fatalf("restored local log [%d,%d), want empty at %d", lg.StartOffset(), lg.EndOffset(), uploaded)
	}
	// Asked again (a crash before the replica recorded its start): no change.
	if again, err := svc.Restore(dir, "orders", 0, lg, nil); err != nil || again != r || lg.EndOffset() != uploaded {
		t.Fatalf("second restore %+v %v, log end %d", again, err, lg.EndOffset())
	}
	rm, err := svc.OpenManifest(dir, true)
	if err != nil || rm.Start() != 0 || rm.End() != uploaded {
		t.Fatalf("restored manifest [%d,%d) %v", rm.Start(), rm.End(), err)
	}
	v := svc.View(dir, "orders", 0, localLog{lg})
	if v.LogStart() != 0 {
		t.Fatalf("restored partition starts at %d, want 0", v.LogStart())
	}
	next, i := int64(0), 0
	for next < uploaded {
		sl, err := v.Read(next, 4000, uploaded)
		if err != nil {
			t.Fatalf("read at %d: %v", next, err)
		}
		b := sliceBytes(t, sl)
		sl.Release()
		err = recordbatch.Walk(b, func(batch []byte, h recordbatch.Header) error {
			recs, err := recordbatch.Records(nil, batch, h, nil, 1<<20)
			if err != nil {
				return err
			}
			for _, rec := range recs {
				if want := fmt.Sprintf("record-%06d-", i); !strings.HasPrefix(string(rec.Value), want) || h.BaseOffset != int64(i) {
					return fmt.Errorf("offset %d: %.20q, want %s", h.BaseOffset, rec.Value, want)
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
	if int64(i) != uploaded {
		t.Fatalf("read %d records back, %d were uploaded", i, uploaded)
	}

	dir, lg = open()
	if r, err := svc.Restore(dir, "orders", 1, lg, nil); err != nil || r.Found || lg.EndOffset() != 0 {
		t.Fatalf("restore of a partition the store lacks: %+v %v, log end %d", r, err, lg.EndOffset())
	}
	var off *tier.Service
	if _, err := off.Restore(dir, "orders", 0, lg, nil); !errors.Is(err, tier.ErrNoStore) {
		t.Fatalf("restore with no store: %v", err)
	}
}

// localLog is a bare log as a View's local side (a replica in the node).
type localLog struct{ *partition.Log }

func (l localLog) LogStartOffset() int64 { return l.StartOffset() }
