package hosted

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/partition"
)

// hdr is the header of an idempotent batch of pid at epoch: records
// seq..seq+n-1.
func hdr(pid int64, epoch int16, seq int32, n int32) partition.BatchHeader {
	h := recordbatch.NoProducer()
	h.ProducerID, h.ProducerEpoch, h.BaseSequence, h.LastOffsetDelta = pid, epoch, seq, n-1
	return h
}

func txnHdr(pid int64, epoch int16, seq int32, n int32) partition.BatchHeader {
	h := hdr(pid, epoch, seq, n)
	h.Attributes |= recordbatch.AttrTransactional
	return h
}

func wantCheck(t *testing.T, ps *Producers, h partition.BatchHeader, wantDup bool, wantOff int64, wantErr *kerr.Error) {
	t.Helper()
	off, _, dup, err := ps.Check(h)
	if dup != wantDup || err != wantErr || (dup && off != wantOff) {
		t.Fatalf("check seq %d epoch %d: dup %v at %d, err %v; want dup %v at %d, err %v", h.BaseSequence, h.ProducerEpoch, dup, off, err, wantDup, wantOff, wantErr)
	}
}

func TestProducersSequences(t *testing.T) {
	ps := NewProducers()
	now := time.Now()
	// No state: any first sequence (KIP-360); no producer: always.
	wantCheck(t, ps, hdr(7, 0, 42, 1), false, 0, nil)
	wantCheck(t, ps, recordbatch.NoProducer(), false, 0, nil)
	ps.Record(recordbatch.NoProducer(), 0, now)
	ps.Record(hdr(7, 0, 0, 3), 10, now) // 0-2 at 10-12
	ps.Record(hdr(7, 0, 3, 2), 13, now) // 3-4 at 13-14
	wantCheck(t, ps, hdr(7, 0, 0, 3), true, 10, nil)
	wantCheck(t, ps, hdr(7, 0, 3, 2), true, 13, nil)
	wantCheck(t, ps, hdr(7, 0, 5, 1), false, 0, nil)
	wantCheck(t, ps, hdr(7, 0, 6, 1), false, 0, kerr.OutOfOrderSequenceNumber)
	wantCheck(t, ps, hdr(7, 0, 0, 2), false, 0, kerr.OutOfOrderSequenceNumber) // not the same batch
	// Epochs: an older one is fenced, a newer one starts at 0.
	wantCheck(t, ps, hdr(7, -1, 5, 1), false, 0, kerr.InvalidProducerEpoch)
	wantCheck(t, ps, hdr(7, 1, 5, 1), false, 0, kerr.OutOfOrderSequenceNumber)
	wantCheck(t, ps, hdr(7, 1, 0, 1), false, 0, nil)
	// A new epoch forgets the old one's batches.
	ps.Record(hdr(7, 1, 0, 1), 20, now)
	wantCheck(t, ps, hdr(7, 1, 0, 1), true, 20, nil)
	wantCheck(t, ps, hdr(7, 1, 1, 1), false, 0, nil)
	if d := ps.Describe(); len(d) != 1 || d[0].ProducerID != 7 || d[0].ProducerEpoch != 1 || d[0].LastSequence != 0 {
		t.Fatalf("describe: %+v", d)
	}
}

func TestProducersWindow(t *testing.T) {
	ps := NewProducers()
	now := time.Now()
	for i := range int32(ProducerWindow + 1) {
		ps.Record(hdr(1, 0, i, 1), int64(100+i), now)
	}
	// The oldest fell out of the window: no longer a duplicate, and out
	// of order.
	wantCheck(t, ps, hdr(1, 0, 0, 1), false, 0, kerr.OutOfOrderSequenceNumber)
	for i := int32(1); i <= ProducerWindow; i++ {
		wantCheck(t, ps, hdr(1, 0, i, 1), true, int64(100+i), nil)
	}
}

func TestProducersSequenceWraps(t *testing.T) {
	if got := seqAdd(math.MaxInt32, 1); got != 0 {
		t.Fatalf("seqAdd(max, 1) = %d, want 0", got)
	}
	if got := seqAdd(math.MaxInt32-1, 3); got != 1 {
		t.Fatalf("seqAdd(max-1, 3) = %d, want 1", got)
	}
	ps := NewProducers()
	ps.Record(hdr(1, 0, math.MaxInt32-1, 2), 0, time.Now())
	wantCheck(t, ps, hdr(1, 0, 0, 1), false, 0, nil)
}

func TestProducersPendingSettle(t *testing.T) {
	ps := NewProducers()
	pending := new(replica.Pending)
	ps.RecordPending(hdr(3, 0, 0, 2), pending, time.Now())
	if n := ps.PendingBatches(); n != 1 {
		t.Fatalf("%d pending, want 1", n)
	}
	_, dp, dup, err := ps.Check(hdr(3, 0, 0, 2))
	if !dup || dp != pending || err != nil {
		t.Fatalf("retry of a pending batch: dup %v pending %p err %v", dup, dp, err)
	}
	ps.Settle(3, pending, partition.AppendInfo{BaseOffset: 40, LastOffset: 41})
	if n := ps.PendingBatches(); n != 0 {
		t.Fatalf("%d pending after settle, want 0", n)
	}
	off, dp, dup, err := ps.Check(hdr(3, 0, 0, 2))
	if !dup || dp != nil || off != 40 || err != nil {
		t.Fatalf("retry of a settled batch: dup %v at %d pending %p err %v", dup, off, dp, err)
	}
	ps.Settle(99, pending, partition.AppendInfo{}) // unknown producer: nothing
}

func TestProducersMarkers(t *testing.T) {
	ps := NewProducers()
	now := time.Now()
	if open, m := ps.TxnView(5, 0); open || m != 0 {
		t.Fatalf("unknown producer: open %v markers %d", open, m)
	}
	if e, c := ps.MarkerFenced(5, 0, 0); e || c {
		t.Fatal("unknown producer fences markers")
	}
	ps.Record(txnHdr(5, 0, 0, 1), 0, now)
	if open, m := ps.TxnView(5, 0); !open || m != 0 {
		t.Fatalf("after a transactional batch: open %v markers %d", open, m)
	}
	if open, _ := ps.TxnView(5, 1); open {
		t.Fatal("open at another epoch")
	}
	ps.RecordMarker(5, 0, 3, now)
	if open, m := ps.TxnView(5, 0); open || m != 1 {
		t.Fatalf("after a marker: open %v markers %d", open, m)
	}
	if e, c := ps.MarkerFenced(5, 0, 2); e || !c {
		t.Fatalf("marker of an older coordinator: epochOld %v coordOld %v", e, c)
	}
	if e, c := ps.MarkerFenced(5, 0, 3); e || c {
		t.Fatalf("marker of the same coordinator: epochOld %v coordOld %v", e, c)
	}
	// A marker at a bumped epoch fences the older producer epoch; the
	// sequence goes on across a marker of the same epoch.
	ps.RecordMarker(5, 1, -1, now)
	if e, _ := ps.MarkerFenced(5, 0, 3); !e {
		t.Fatal("marker of an older producer epoch not fenced")
	}
	// A control batch recorded as a batch is a marker.
	ps.Record(txnHdr(5, 1, 0, 1), 1, now)
	mk := txnHdr(5, 1, -1, 1)
	mk.Attributes |= recordbatch.AttrControl
	ps.Record(mk, 2, now)
	if open, m := ps.TxnView(5, 1); open || m != 3 {
		t.Fatalf("after a control batch: open %v markers %d", open, m)
	}
	wantCheck(t, ps, hdr(5, 1, 1, 1), false, 0, nil)
}

func TestProducersExpireDescribe(t *testing.T) {
	ps := NewProducers()
	old, now := time.UnixMilli(1_000), time.UnixMilli(2_000)
	ps.Record(hdr(9, 2, 0, 4), 0, now)
	ps.Record(hdr(4, 0, 0, 1), 4, old)
	ps.RecordMarker(6, 0, -1, now)
	d := ps.Describe()
	if len(d) != 3 || d[0].ProducerID != 4 || d[1].ProducerID != 6 || d[2].ProducerID != 9 {
		t.Fatalf("describe not by id: %+v", d)
	}
	if d[2].ProducerEpoch != 2 || d[2].LastSequence != 3 || d[2].LastTimestamp != 2_000 || d[2].CoordinatorEpoch != -1 {
		t.Fatalf("describe of 9: %+v", d[2])
	}
	if n := ps.Expire(time.UnixMilli(1_500)); n != 1 {
		t.Fatalf("expired %d, want 1", n)
	}
	if d := ps.Describe(); len(d) != 2 || d[0].ProducerID != 6 {
		t.Fatalf("after expiry: %+v", d)
	}
}
