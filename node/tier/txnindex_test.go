package tier_test

import (
	"context"
	"slices"
	"testing"

	"github.com/spool-log/spool/node/tier"
	"github.com/spool-log/spool/node/tier/tiertest"
)

func TestTxnIndexRoundTripAndRange(t *testing.T) {
	txns := []tier.AbortedTxn{{ProducerID: 7, FirstOffset: 10, MarkerOffset: 20}, {ProducerID: 8, FirstOffset: 5, MarkerOffset: 30}, {ProducerID: 7, FirstOffset: 40, MarkerOffset: 90}}
	if b := tier.EncodeTxnIndex(nil); b != nil {
		t.Fatalf("no transactions encode as %q, want no object", b)
	}
	got, err := tier.DecodeTxnIndex(tier.EncodeTxnIndex(txns))
	if err != nil || !slices.Equal(got, txns) {
		t.Fatalf("round trip: %v %v", got, err)
	}
	for _, c := range []struct {
		from, to int64
		want     []tier.AbortedTxn
	}{
		{0, 100, txns},
		{21, 100, txns[1:]}, // producer 7's first ended at 20
		{0, 6, txns[1:2]},   // only producer 8 had begun below 6
		{31, 40, nil},       // producer 7's second starts at 40
		{31, 41, txns[2:]},
		{91, 200, nil},
	} {
		if got := tier.AbortedIn(txns, c.from, c.to); !slices.Equal(got, c.want) {
			t.Errorf("AbortedIn [%d,%d) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}

func TestTxnIndexReadsTheOldCheckpointLayout(t *testing.T) {
	// What segments uploaded before the SPTX layout carry: node/hosted's
	// txn-index checkpoint, its aborted list by marker offset.
	old := []byte(`{"version":1,"scanned":100,"open":{"9":95},"aborted":[[7,40,90],[7,10,20]],"last":[99,0,1]}`)
	got, err := tier.DecodeTxnIndex(old)
	want := []tier.AbortedTxn{{ProducerID: 7, FirstOffset: 10, MarkerOffset: 20}, {ProducerID: 7, FirstOffset: 40, MarkerOffset: 90}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("old layout: %v %v, want %v", got, err, want)
	}
}

func TestTxnIndexRejectsMalformed(t *testing.T) {
	good := tier.EncodeTxnIndex([]tier.AbortedTxn{{ProducerID: 1, FirstOffset: 2, MarkerOffset: 3}, {ProducerID: 1, FirstOffset: 4, MarkerOffset: 5}})
	swapped := tier.EncodeTxnIndex([]tier.AbortedTxn{{ProducerID: 1, FirstOffset: 4, MarkerOffset: 5}, {ProducerID: 1, FirstOffset: 2, MarkerOffset: 3}})
	backwards := tier.EncodeTxnIndex([]tier.AbortedTxn{{ProducerID: 1, FirstOffset: 9, MarkerOffset: 3}})
	version := append([]byte{}, good...)
	version[4] = 2
	for name, b := range map[string][]byte{
		"truncated entry":      good[:len(good)-1],
		"not by marker offset": swapped,
		"marker before first":  backwards,
		"unknown version":      version,
		"magic only":           []byte("SPTX"),
		"neither layout":       []byte("garbage"),
		"old layout, v2":       []byte(`{"version":2,"aborted":[]}`),
	} {
		if txns, err := tier.DecodeTxnIndex(b); err == nil {
			t.Errorf("%s: decoded as %v, want an error", name, txns)
		}
	}
}

func FuzzDecodeTxnIndex(f *testing.F) {
	f.Add(tier.EncodeTxnIndex([]tier.AbortedTxn{{ProducerID: 1, FirstOffset: 2, MarkerOffset: 3}}))
	f.Add([]byte(`{"version":1,"aborted":[[1,2,3]]}`))
	f.Add([]byte("SPTX\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		txns, err := tier.DecodeTxnIndex(b)
		if err != nil {
			return
		}
		// Whatever decodes is ordered by marker offset and round-trips.
		for i := range txns {
			if txns[i].FirstOffset < 0 || txns[i].MarkerOffset < txns[i].FirstOffset || (i > 0 && txns[i-1].MarkerOffset > txns[i].MarkerOffset) {
				t.Fatalf("decoded %v out of order", txns)
			}
		}
		again, err := tier.DecodeTxnIndex(tier.EncodeTxnIndex(txns))
		if err != nil || !slices.Equal(again, txns) {
			t.Fatalf("re-encoded %v: %v %v", txns, again, err)
		}
	})
}

// TestUploaderWaitsForTheStableOffset: a segment with a record of a
// transaction still open is not uploaded (its aborted list could not be
// complete); once the transaction ended it is, with its aborted
// transactions beside it, which the reader gives back for any range of it.
func TestUploaderWaitsForTheStableOffset(t *testing.T) {
	sw := tiertest.Start(t)
	store := sw.Store(t, "tx/")
	rep, m, lg := tieredLog(t)
	appendRecords(t, rep, 0, 300)
	closed := lg.ClosedSegments()
	if len(closed) < 3 {
		t.Fatalf("%d closed segments, want at least 3", len(closed))
	}
	// A transaction open from inside the second closed segment.
	openFrom := closed[1].Base + 1
	aborted := []tier.AbortedTxn{{ProducerID: 5, FirstOffset: 1, MarkerOffset: openFrom - 1}}
	stable := false
	var asked [][2]int64
	p := &tier.Partition{Topic: "orders", Index: 0, Source: rep, Manifest: m,
		Aborted: func(base, next int64) ([]tier.AbortedTxn, bool, error) {
			asked = append(asked, [2]int64{base, next})
			if !stable && next > openFrom {
				return nil, false, nil
			}
			return tier.AbortedIn(aborted, base, next), true, nil
		}}
	layout := tier.Layout{Prefix: "tx/"}
	u := tier.NewUploader(tier.DefaultUploaderConfig(), store, layout, func() []*tier.Partition { return []*tier.Partition{p} }, quietLog(), nil)
	u.Pass(context.Background())
	if m.End() != closed[0].Next {
		t.Fatalf("with a transaction open from %d the manifest ends at %d, want the first segment's end %d (asked %v)", openFrom, m.End(), closed[0].Next, asked)
	}
	if b, _ := u.Backlog("orders", 0); b.Segments == 0 {
		t.Fatalf("segments waiting for the stable offset are no backlog: %+v", b)
	}
	stable = true
	u.Pass(context.Background())
	if m.End() != closed[len(closed)-1].Next {
		t.Fatalf("after the transaction ended the manifest ends at %d, want %d", m.End(), closed[len(closed)-1].Next)
	}
	cache, err := tier.NewCache(tier.DefaultCacheConfig(t.TempDir()), store)
	if err != nil {
		t.Fatal(err)
	}
	r := tier.NewReader(cache, layout)
	segs := m.Segments()
	for i, s := range segs {
		got, err := r.Aborted(context.Background(), "orders", 0, s, s.Base, s.Next)
		if err != nil {
			t.Fatal(err)
		}
		if want := tier.AbortedIn(aborted, s.Base, s.Next); !slices.Equal(got, want) {
			t.Fatalf("segment %d [%d,%d): aborted %v, want %v", i, s.Base, s.Next, got, want)
		}
		if len(got) == 0 && s.FileSizes[5] != 0 {
			t.Fatalf("segment %d with no aborted transaction has a txnindex of %d bytes", i, s.FileSizes[5])
		}
	}
	// Within the second segment, a range after the marker lists none (a
	// second read of its list, from memory).
	if got, err := r.Aborted(context.Background(), "orders", 0, segs[1], openFrom, segs[1].Next); err != nil || len(got) != 0 {
		t.Fatalf("after the marker at %d: %v %v", openFrom-1, got, err)
	}
}
