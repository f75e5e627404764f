package tier_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/tier"
	"github.com/spool-log/spool/node/tier/tiertest"
	"github.com/spool-log/spool/partition"
)

// idempotentBatch is a batch of n 200-byte records of pid (epoch 0) from seq.
func idempotentBatch(pid int64, seq int32, n int) []byte {
	h := recordbatch.NoProducer()
	h.ProducerID, h.BaseSequence, h.LastOffsetDelta = pid, seq, int32(n-1)
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		recs[i] = recordbatch.Record{OffsetDelta: int64(i), Value: bytes.Repeat([]byte("p"), 200)}
	}
	b, _ := recordbatch.Build(nil, h, recs, nil)
	return b
}

// TestProducerSnapshotsChainAcrossUploads: each segment is uploaded with
// the producer state as of its end, built on the one uploaded before it,
// so a producer that wrote only in a segment local retention has since
// deleted is still in the last segment's snapshot — also when a new
// uploader (a new leader) continues from the store's; each replica is
// handed the last one to keep, and a restore hands on the same.
func TestProducerSnapshotsChainAcrossUploads(t *testing.T) {
	sw := tiertest.Start(t)
	store := sw.Store(t, "ps/")
	rep, m, lg := tieredLog(t)
	early, err := rep.Append(idempotentBatch(8, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	appendRecords(t, rep, 0, 150)
	now := time.Now()
	p := &tier.Partition{Topic: "orders", Index: 0, Source: rep, Manifest: m,
		ProducerSnapshot: func(prev []byte, next int64) ([]byte, error) {
			return hosted.SnapshotAt(rep, prev, next, now, now.Add(-time.Hour))
		}}
	layout := tier.Layout{Prefix: "ps/"}
	uploader := func() *tier.Uploader {
		return tier.NewUploader(tier.DefaultUploaderConfig(), store, layout, func() []*tier.Partition { return []*tier.Partition{p} }, quietLog(), nil)
	}
	uploader().Pass(context.Background())
	if _, err := rep.EnforceRetention(); err != nil || lg.StartOffset() <= early.BaseOffset {
		t.Fatalf("retention kept producer 8's batch at %d: start %d (%v)", early.BaseOffset, lg.StartOffset(), err)
	}
	var seven []int64
	for i := range 3 {
		info, err := rep.Append(idempotentBatch(7, int32(3*i), 3))
		if err != nil {
			t.Fatal(err)
		}
		seven = append(seven, info.BaseOffset)
		appendRecords(t, rep, 1000+100*i, 100)
	}
	var kept []byte // what the partition is handed to keep (every replica)
	p.SeedProducers = func(b []byte) error { kept = b; return nil }
	second := uploader() // a new uploader (a new leader): builds on the store's snapshot
	second.Pass(context.Background())
	if m.End() <= seven[2] {
		t.Fatalf("manifest ends at %d, producer 7's last batch is at %d", m.End(), seven[2])
	}
	second.Pass(context.Background()) // hands on the snapshot of the segment it just recorded
	if k, err := hosted.DecodeProducerSnapshot(kept); err != nil || k.End != m.End() {
		t.Fatalf("the partition keeps a snapshot as of %d (%v), want the remote end %d", k.End, err, m.End())
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc, err := tier.New(ctx, sw.Settings(t, "ps/"), t.TempDir(), func() []tier.Hosted { return nil }, quietLog(), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	restored, err := partition.Open(dir, partition.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { restored.Close() })
	var seed []byte
	r, err := svc.Restore(dir, "orders", 0, restored, func(b []byte) error { seed = b; return nil })
	if err != nil || !r.Producers {
		t.Fatalf("restore %+v, %v: no producer snapshot handed on", r, err)
	}
	s, err := hosted.DecodeProducerSnapshot(seed)
	if err != nil || s.End != m.End() || !bytes.Equal(seed, kept) {
		t.Fatalf("restored snapshot: end %d (%v), want the remote end %d, the one the replicas keep", s.End, err, m.End())
	}
	ps := s.Producers
	if _, _, dup, _ := ps.Check(batchHeader(t, idempotentBatch(8, 0, 1))); !dup {
		t.Fatal("producer 8, which wrote only in a segment retention deleted, is not in the last snapshot")
	}
	if off, _, dup, _ := ps.Check(batchHeader(t, idempotentBatch(7, 6, 3))); !dup || off != seven[2] {
		t.Fatalf("producer 7's last batch: duplicate %v at %d, want at %d", dup, off, seven[2])
	}
}

func batchHeader(t *testing.T, b []byte) partition.BatchHeader {
	t.Helper()
	h, err := partition.ParseBatchHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
