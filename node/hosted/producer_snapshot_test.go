package hosted

import (
	"bytes"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/partition"
)

// idempotentBatch is a batch of n records of pid at epoch from seq.
func idempotentBatch(pid int64, epoch int16, seq int32, n int) []byte {
	h := hdr(pid, epoch, seq, int32(n))
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		recs[i] = recordbatch.Record{OffsetDelta: int64(i), Value: bytes.Repeat([]byte("v"), 100)}
	}
	b, _ := recordbatch.Build(nil, h, recs, nil)
	return b
}

// singleCopy is a single-copy replica over a fresh log in dir, its log
// restarted at start.
func singleCopy(t *testing.T, dir string, start int64) *replica.Replica {
	t.Helper()
	lg, err := partition.Open(dir, partition.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lg.Close() })
	if start > 0 {
		if err := lg.RestartAt(start); err != nil {
			t.Fatal(err)
		}
	}
	return replica.New(lg, replica.Config{Self: 1, Replicas: []int32{1}})
}

// TestProducerSnapshots: a snapshot as of an offset holds each producer's
// last batches below it and none after; one built on an earlier snapshot
// is the one built from the whole log; a rebuild of a log restored at a
// snapshot's end starts from it (a retry of a batch only the store holds
// is a duplicate at its old offset), and from nothing when the log does
// not continue it; producers idle past the expiry are left out.
func TestProducerSnapshots(t *testing.T) {
	rep := singleCopy(t, t.TempDir(), 0)
	var offsets []int64 // base offset of each of producer 7's batches
	for i := range 6 {
		info, err := rep.Append(idempotentBatch(7, 0, int32(2*i), 2))
		if err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, info.BaseOffset)
		if i == 1 {
			if _, err := rep.Append(idempotentBatch(8, 3, 0, 1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Producer 9's transaction is open (no marker yet).
	txn := idempotentBatch(9, 2, 0, 1)
	h, _ := recordbatch.ParseHeader(txn)
	h.Attributes |= recordbatch.AttrTransactional
	txn, _ = recordbatch.Build(nil, h, []recordbatch.Record{{Value: []byte("in a transaction")}}, nil)
	if _, err := rep.Append(txn); err != nil {
		t.Fatal(err)
	}
	if _, err := rep.Append(recordbatch.Simple(time.Now().UnixMilli(), []byte("plain"))); err != nil {
		t.Fatal(err)
	}
	end := rep.HighWatermark()
	mid := offsets[4] // producer 7's fifth batch and after are not below it
	now := time.Now()
	never := now.Add(-time.Hour)

	atMid, err := SnapshotAt(rep, nil, mid, now, never)
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodeProducerSnapshot(atMid)
	if err != nil || s.End != mid {
		t.Fatalf("decode: end %d, %v; want end %d", s.End, err, mid)
	}
	wantCheck(t, s.Producers, hdr(7, 0, 6, 2), true, offsets[3], nil) // its fourth batch
	wantCheck(t, s.Producers, hdr(7, 0, 8, 2), false, 0, nil)         // the fifth is next, not a duplicate
	wantCheck(t, s.Producers, hdr(8, 3, 0, 1), true, offsets[1]+2, nil)

	whole, err := SnapshotAt(rep, nil, end, now, never)
	if err != nil {
		t.Fatal(err)
	}
	chained, err := SnapshotAt(rep, atMid, end, now, never)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(whole, chained) {
		t.Fatalf("snapshot built on the one at %d differs from the one built from the whole log", mid)
	}
	if expired, _ := SnapshotAt(rep, nil, end, now, now.Add(time.Hour)); len(mustDecode(t, expired).Producers.m) != 0 {
		t.Fatal("producers idle past the expiry are in the snapshot")
	}

	// Restored at end with the snapshot of end: a retry of the last
	// batch is a duplicate at its old offset; the next batch follows.
	dir := t.TempDir()
	restored := singleCopy(t, dir, end)
	if err := WriteProducerSeed(dir, whole); err != nil {
		t.Fatal(err)
	}
	ps := NewProducers()
	if err := ps.RebuildIn(restored, dir, now); err != nil {
		t.Fatal(err)
	}
	wantCheck(t, ps, hdr(7, 0, 10, 2), true, offsets[5], nil)
	wantCheck(t, ps, hdr(7, 0, 12, 2), false, 0, nil)
	if open, _ := ps.TxnView(9, 2); !open {
		t.Fatal("producer 9's open transaction is not open in the restored state")
	}
	// A seed the log does not continue (its end below the log start) is
	// not used: the state is what the log holds, nothing.
	if err := WriteProducerSeed(dir, atMid); err != nil {
		t.Fatal(err)
	}
	if err := ps.RebuildIn(restored, dir, now); err != nil {
		t.Fatal(err)
	}
	if len(ps.m) != 0 {
		t.Fatalf("a seed as of %d was used for a log starting at %d", mid, end)
	}
	if err := WriteProducerSeed(dir, []byte("not a snapshot")); err == nil {
		t.Fatal("a malformed seed was written")
	}
}

func mustDecode(t *testing.T, b []byte) ProducerSnapshot {
	t.Helper()
	s, err := DecodeProducerSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func FuzzDecodeProducerSnapshot(f *testing.F) {
	ps := NewProducers()
	ps.Record(hdr(7, 1, 0, 3), 10, time.UnixMilli(1000))
	ps.Record(hdr(9, 0, 5, 1), 20, time.UnixMilli(2000))
	f.Add(ps.EncodeSnapshot(30))
	f.Add(NewProducers().EncodeSnapshot(0))
	f.Add([]byte("SPPS\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeProducerSnapshot(b)
		if err != nil {
			return
		}
		// What decodes encodes to the same bytes.
		if again := s.Producers.EncodeSnapshot(s.End); !bytes.Equal(again, b) {
			t.Fatalf("decoded and encoded again: %x, was %x", again, b)
		}
	})
}
