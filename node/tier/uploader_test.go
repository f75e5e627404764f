package tier_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/tier"
	"github.com/spool-log/spool/node/tier/tiertest"
	"github.com/spool-log/spool/partition"
)

// tieredLog is a single-copy replica of a log with small segments and a
// manifest, tiered, with local retention of one byte (keep only what
// must stay).
func tieredLog(t *testing.T) (*replica.Replica, *tier.Manifest, *partition.Log) {
	t.Helper()
	dir := t.TempDir()
	cfg := partition.DefaultConfig()
	cfg.SegmentBytes = 16 << 10
	cfg.RetentionAge, cfg.RetentionBytes = -1, 1
	lg, err := partition.Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lg.Close() })
	m, err := tier.OpenManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.SetTiered(true)
	rep := replica.New(lg, replica.Config{Self: 1, Replicas: []int32{1}, Remote: m})
	return rep, m, lg
}

func appendRecords(t *testing.T, rep *replica.Replica, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		b := recordbatch.Simple(time.Now().UnixMilli(), []byte(fmt.Sprintf("record-%06d-%s", i, bytes.Repeat([]byte("x"), 200))))
		if _, err := rep.Append(b); err != nil {
			t.Fatal(err)
		}
	}
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// TestUploaderCopiesRecordsAndHoldsRetention: the uploader copies every
// closed segment byte for byte with its side files and records it; local
// retention then deletes exactly the uploaded segments and never the
// active one; with the store down, produce goes on, nothing not uploaded
// is deleted, the backlog grows and names the failure; once the store is
// back the backlog drains.
func TestUploaderCopiesRecordsAndHoldsRetention(t *testing.T) {
	sw := tiertest.Start(t)
	store := sw.Store(t, "t1/")
	rep, m, lg := tieredLog(t)
	appendRecords(t, rep, 0, 300) // ~70 KiB: four or five closed segments
	// Before any upload retention deletes nothing.
	if n, err := rep.EnforceRetention(); err != nil || n != 0 {
		t.Fatalf("retention before upload: %d %v", n, err)
	}
	p := &tier.Partition{Topic: "orders", Index: 0, Source: rep, Manifest: m}
	cfg := tier.DefaultUploaderConfig()
	cfg.MinBackoff, cfg.MaxBackoff = 10*time.Millisecond, 50*time.Millisecond
	u := tier.NewUploader(cfg, store, tier.Layout{Prefix: "t1/"}, func() []*tier.Partition { return []*tier.Partition{p} }, quietLog(), nil)
	closed := lg.ClosedSegments()
	u.Pass(context.Background())
	if m.End() != closed[len(closed)-1].Next {
		t.Fatalf("manifest end %d, want %d", m.End(), closed[len(closed)-1].Next)
	}
	segs := m.Segments()
	if len(segs) != len(closed) {
		t.Fatalf("%d remote segments, want %d", len(segs), len(closed))
	}
	for i, s := range segs {
		want, err := os.ReadFile(closed[i].LogPath)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := store.GetRange(context.Background(), "t1/orders/0/"+tier.SegmentDir(s.Base, s.Next, s.ID)+"log", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.Equal(got, want[:closed[i].Size]) || s.Base != closed[i].Base || s.Next != closed[i].Next {
			t.Fatalf("segment %d: remote %d bytes [%d,%d), local %d [%d,%d)", i, len(got), s.Base, s.Next, closed[i].Size, closed[i].Base, closed[i].Next)
		}
		if s.FileSizes[1] == 0 || s.FileSizes[3] == 0 {
			t.Fatalf("segment %d: no index or epoch checkpoint uploaded: %v", i, s.FileSizes)
		}
	}
	if b, ok := u.Backlog("orders", 0); !ok || b.Segments != 0 {
		t.Fatalf("backlog after upload %+v", b)
	}
	n, err := rep.EnforceRetention()
	if err != nil || n != len(closed) || lg.StartOffset() != m.End() {
		t.Fatalf("retention: %d deleted (%v), start %d, want %d and %d", n, err, lg.StartOffset(), len(closed), m.End())
	}

	// The store goes away: produce goes on, nothing is deleted early.
	sw.Stop()
	endBefore := m.End()
	appendRecords(t, rep, 300, 300)
	u.Pass(context.Background())
	b, _ := u.Backlog("orders", 0)
	if b.Segments == 0 || b.Failures == 0 || b.LastError == "" || m.End() != endBefore {
		t.Fatalf("backlog with the store down: %+v, end %d (was %d)", b, m.End(), endBefore)
	}
	if n, err := rep.EnforceRetention(); err != nil || n != 0 || lg.StartOffset() != endBefore {
		t.Fatalf("retention with the store down deleted %d (%v), start %d", n, err, lg.StartOffset())
	}
	sw.Restart(t)
	sw.WaitReady(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		time.Sleep(60 * time.Millisecond) // past the backoff
		u.Pass(context.Background())
		if b, _ := u.Backlog("orders", 0); b.Segments == 0 && b.Failures == 0 {
			break
		}
		if time.Now().After(deadline) {
			b, _ := u.Backlog("orders", 0)
			t.Fatalf("backlog not drained: %+v", b)
		}
	}
	if _, err := rep.EnforceRetention(); err != nil || lg.StartOffset() != m.End() {
		t.Fatalf("after catching up: start %d, remote end %d (%v)", lg.StartOffset(), m.End(), err)
	}
}

// TestRemoteRetentionAndOrphans: total retention by size moves the remote
// start past the oldest segments, and the sweep then removes their
// objects and an orphan below the manifest's end (an upload cut short),
// but neither a live segment's objects nor an orphan above the end (an
// upload that may still be recorded).
func TestRemoteRetentionAndOrphans(t *testing.T) {
	sw := tiertest.Start(t)
	store := sw.Store(t, "rr/")
	rep, m, _ := tieredLog(t)
	appendRecords(t, rep, 0, 400)
	var limit int64 = -1
	p := &tier.Partition{Topic: "t", Index: 1, Source: rep, Manifest: m, Retention: func() (time.Duration, int64) { return -1, limit }}
	cfg := tier.DefaultUploaderConfig()
	cfg.SweepEvery = 0
	layout := tier.Layout{Prefix: "rr/"}
	u := tier.NewUploader(cfg, store, layout, func() []*tier.Partition { return []*tier.Partition{p} }, quietLog(), nil)
	u.Pass(context.Background())
	segs := m.Segments()
	if len(segs) < 4 {
		t.Fatalf("%d segments uploaded", len(segs))
	}
	ctx := context.Background()
	var orphanLow, orphanHigh tier.SegmentID
	orphanLow[0], orphanHigh[0] = 0xAA, 0xBB
	put := func(key string) {
		if err := store.Put(ctx, key, strings.NewReader("junk"), 4); err != nil {
			t.Fatal(err)
		}
	}
	put("rr/t/1/" + tier.SegmentDir(segs[1].Base, segs[1].Next, orphanLow) + "log")
	put("rr/t/1/" + tier.SegmentDir(m.End(), m.End()+100, orphanHigh) + "log")
	// Keep about the newest two segments' worth.
	limit = segs[len(segs)-1].Size + segs[len(segs)-2].Size
	u.Pass(context.Background())
	if m.Start() <= segs[0].Base || len(m.Segments()) >= len(segs) {
		t.Fatalf("remote start %d after retention, %d of %d segments left", m.Start(), len(m.Segments()), len(segs))
	}
	n, err := u.SweepOrphans(ctx, p)
	if err != nil || n == 0 {
		t.Fatalf("sweep removed %d: %v", n, err)
	}
	objs, err := store.List(ctx, "rr/t/1/")
	if err != nil {
		t.Fatal(err)
	}
	live := map[tier.SegmentID]bool{}
	for _, s := range m.Segments() {
		live[s.ID] = true
	}
	sawHigh, liveSeen := false, map[tier.SegmentID]bool{}
	for _, o := range objs {
		_, _, id, ok := tier.ParseSegmentDir(o.Key[len("rr/t/1/"):])
		switch {
		case !ok:
			if o.Key != "rr/t/1/manifest" {
				t.Errorf("unexpected object %s", o.Key)
			}
		case id == orphanHigh:
			sawHigh = true
		case live[id]:
			liveSeen[id] = true
		default:
			t.Errorf("object %s survived the sweep", o.Key)
		}
	}
	if !sawHigh || len(liveSeen) != len(live) {
		t.Fatalf("sweep removed too much: orphan above the end kept %v, live %d of %d", sawHigh, len(liveSeen), len(live))
	}
	// The store's manifest copy is the committed one.
	key, _ := layout.ManifestKey("t", 1)
	rc, err := store.GetRange(ctx, key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	start, rsegs, err := tier.DecodeManifest(b)
	if err != nil || start != m.Start() || len(rsegs) != len(m.Segments()) {
		t.Fatalf("store manifest start %d, %d segments, %v", start, len(rsegs), err)
	}
}
