package integration

// Remote retention with real processes (issue 30): the total retention
// (retention.bytes, the remote segments included) moves the remote log
// start past the oldest segments and their objects leave the store; what
// is within retention stays, readable from the new start.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node/tier"
	"github.com/spool-log/spool/node/tier/tiertest"
)

// TestTierRemoteRetention: an R=3 tiered topic with retention.bytes of
// four segments and a local retention of one byte gets 3 MB (a dozen
// segments). Retention moves the remote start to a segment boundary above
// 0 and deletes no more than it must (what is kept, remote and local, is
// at least retention.bytes); ListOffsets earliest is that start; every
// record from it to the end reads back in order at its offset; and the
// store keeps the objects of every kept segment while those of the
// expired ones are removed.
func TestTierRemoteRetention(t *testing.T) {
	sw := tiertest.Start(t)
	store := sw.Store(t, "it/")
	nodes := startCluster(t, 3, withTier(sw))
	seeds := kafkaAddrs(nodes)
	topic := uniqueTopic("tier-ret")
	const limit = 4 * tierSegmentBytes
	createTieredTopic(t, nodes, topic, 1, "retention.bytes", strconv.Itoa(limit))
	want := bulkProduce(t, seeds, topic, 1, "r", 3<<20)[0]

	var start int64
	var kept []tier.RemoteSegment
	retry.Run(t, 90*time.Second, func() error {
		s, segs, err := storeManifest(t, store, topic, 0)
		if err != nil {
			return err
		}
		if s == 0 || len(segs) == 0 || segs[len(segs)-1].Next < int64(len(want))-int64(2*tierSegmentBytes/1024) {
			return fmt.Errorf("remote start %d, %d segments", s, len(segs))
		}
		// Settled: five upload passes change nothing more.
		time.Sleep(time.Second)
		if s2, segs2, err := storeManifest(t, store, topic, 0); err != nil || s2 != s || len(segs2) != len(segs) {
			return fmt.Errorf("remote start %d, %d segments, then %d, %d segments (%v)", s, len(segs), s2, len(segs2), err)
		}
		start, kept = s, nil
		for _, seg := range segs {
			if seg.Next > s {
				kept = append(kept, seg)
			}
		}
		return nil
	})
	if kept[0].Base != start {
		t.Fatalf("remote start %d is not a segment boundary (first kept segment [%d,%d))", start, kept[0].Base, kept[0].Next)
	}
	var keptBytes int64
	for _, seg := range kept {
		keptBytes += seg.Size
	}
	_, local := localSegments(t, waitLeader(t, nodes, topic, 0, -1, 10*time.Second), topic, 0)
	if keptBytes+local < limit {
		t.Fatalf("retention kept %d bytes remote and %d local from %d, below retention.bytes %d: it deleted more than expired", keptBytes, local, start, limit)
	}

	adm := kadm.NewClient(franzClient(t, seeds[0], kgo.SeedBrokers(seeds...)))
	retry.Run(t, 30*time.Second, func() error {
		starts, err := adm.ListStartOffsets(ctxTimeout(t, 10*time.Second), topic)
		if err != nil {
			return err
		}
		o, _ := starts.Lookup(topic, 0)
		if o.Err != nil || o.Offset != start {
			return fmt.Errorf("ListOffsets earliest %d (%v), want the remote start %d", o.Offset, o.Err, start)
		}
		return nil
	})
	got := franzConsume(t, seeds[0], topic, 0, kgo.NewOffset().AtStart(), len(want)-int(start))
	for i, r := range got {
		if off := start + int64(i); r.Offset != off || !strings.HasPrefix(string(r.Value), want[off]) {
			t.Fatalf("record %d from the start %d: offset %d, %.30q; want offset %d, %s", i, start, r.Offset, r.Value, off, want[off])
		}
	}

	// The expired segments' objects leave the store (the orphan sweep);
	// the kept ones' stay.
	prefix, err := tier.Layout{Prefix: "it/"}.PartitionPrefix(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 60*time.Second, func() error {
		objs, err := store.List(context.Background(), prefix)
		if err != nil {
			return err
		}
		logs := map[tier.SegmentID]bool{}
		for _, o := range objs {
			base, next, id, ok := tier.ParseSegmentDir(o.Key[len(prefix):])
			if !ok {
				continue
			}
			if next <= start {
				return fmt.Errorf("object %s of the expired range [%d,%d) is still in the store", o.Key, base, next)
			}
			if strings.HasSuffix(o.Key, "/log") {
				logs[id] = true
			}
		}
		for _, seg := range kept {
			if !logs[seg.ID] {
				return fmt.Errorf("kept segment [%d,%d) has no log object", seg.Base, seg.Next)
			}
		}
		return nil
	})
	t.Logf("remote start %d of %d records; kept %d segments (%d bytes) in the store and %d bytes locally, retention.bytes %d", start, len(want), len(kept), keptBytes, local, limit)
}
