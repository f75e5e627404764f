package replica

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/partition"
)

// keyed is a batch of one record with key k and value v.
func keyed(k, v string) []byte {
	h := recordbatch.NoProducer()
	h.FirstTimestamp, h.MaxTimestamp = 1700000000000, 1700000000000
	b, err := recordbatch.Build(nil, h, []recordbatch.Record{{Key: []byte(k), Value: []byte(v)}}, nil)
	if err != nil {
		panic(err)
	}
	return b
}

// latestValues is each key's last value in r's committed log, and how many
// records it holds.
func latestValues(t *testing.T, r *Replica) (map[string]string, int) {
	t.Helper()
	out, n := map[string]string{}, 0
	for _, b := range readAll(t, r) {
		h, err := recordbatch.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := recordbatch.ParseRecords(nil, b[recordbatch.HeaderSize:h.Size()], h.NumRecords, h.LastOffsetDelta)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			out[string(rec.Key)] = string(rec.Value)
			n++
		}
	}
	return out, n
}

// A replicated compacted log is cleaned on every replica, below its Raft
// log; a follower that was down meanwhile gets the snapshot, copies the
// cleaned records from the leader, and ends with the same bytes at the same
// offsets, then becomes leader with every key's latest value.
func TestRaftCompactionAndACopiedSnapshot(t *testing.T) {
	pcfg := partition.DefaultConfig()
	pcfg.Compact = true
	pcfg.SegmentBytes = 2048
	c := newRaftClusterWith(t, 3, pcfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produce := func(k, v string) {
		t.Helper()
		for range 50 {
			_, err := c.leader().Produce(ctx, keyed(k, v), AcksAll)
			if err == nil {
				return
			}
			if ctx.Err() != nil {
				t.Fatal(err)
			}
		}
		t.Fatalf("produce %s=%s never succeeded", k, v)
	}
	for i := range 50 {
		produce(fmt.Sprintf("k%d", i%5), fmt.Sprintf("first-%d-%s", i, strings.Repeat("x", 60)))
	}
	lead := c.leader()
	var down int32 = -1
	for _, id := range c.ids {
		if id != lead.self {
			down = id
			break
		}
	}
	c.stop(down)
	for i := range 300 {
		produce(fmt.Sprintf("k%d", i%5), fmt.Sprintf("second-%d-%s", i, strings.Repeat("y", 60)))
	}
	lead = c.leader()
	// The leader seals (and so cleans) only below what its active
	// followers hold; the stopped one counts as active until an election
	// timeout has passed without a word from it (CheckQuorum), which 300
	// produces on a quick machine do not take.
	retryUntil(t, func() error {
		g := lead.rg
		g.mu.Lock()
		pr, ok := g.rn.Status().Progress[RaftID(down)]
		g.mu.Unlock()
		if ok && pr.RecentActive {
			return fmt.Errorf("the leader still counts the stopped replica %d as active", down)
		}
		return nil
	})
	for _, id := range c.ids {
		r := c.reps[id]
		if id == down {
			continue
		}
		if err := r.Flush(); err != nil {
			t.Fatal(err)
		}
		before := r.Size()
		st, err := r.Clean(1 << 20)
		if err != nil {
			t.Fatalf("clean on %d: %v", id, err)
		}
		if r.Size() >= before/2 {
			t.Errorf("replica %d: %d bytes after cleaning, %d before (%+v)", id, r.Size(), before, st)
		}
	}
	c.start(down)
	produce("k-after", "after")
	lead = c.leader()
	f := c.reps[down]
	retryUntil(t, func() error {
		if f.HighWatermark() != lead.HighWatermark() {
			return fmt.Errorf("follower %d high watermark %d, leader %d", down, f.HighWatermark(), lead.HighWatermark())
		}
		return nil
	})
	if f.LogStartOffset() != lead.LogStartOffset() {
		t.Errorf("follower log starts at %d, leader's at %d", f.LogStartOffset(), lead.LogStartOffset())
	}
	fb, lb := readAll(t, f), readAll(t, lead)
	if len(fb) != len(lb) {
		t.Fatalf("follower holds %d batches, leader %d", len(fb), len(lb))
	}
	for i := range fb {
		if !bytes.Equal(fb[i], lb[i]) {
			t.Fatalf("batch %d differs between follower %d and leader %d", i, down, lead.self)
		}
	}
	want, n := latestValues(t, lead)
	if len(want) != 6 || n >= 350 {
		t.Fatalf("leader holds %d keys in %d records", len(want), n)
	}
	// The copied follower leads: its log has every key's latest value.
	// Gossip's word on the stopped leader wakes the others, whose group
	// may sleep (quiesce.go): a sleeping follower's election timer is off.
	c.stop(lead.self)
	for _, r := range c.reps {
		r.MemberFailed(lead.self)
	}
	retryUntil(t, func() error {
		if l := c.leader(); l == nil || l.self == lead.self {
			return fmt.Errorf("no new leader")
		}
		return nil
	})
	produce("k-last", "last")
	for _, id := range c.ids {
		if id == lead.self {
			continue
		}
		got, _ := latestValues(t, c.reps[id])
		for k, v := range want {
			if got[k] != v {
				t.Errorf("replica %d: %s=%q, want %q", id, k, got[k], v)
			}
		}
	}
}

// Under LogAppendTime the leader stamps the batch once, before proposing:
// the producer is told the time, and every replica holds the same stamped
// bytes. Under CreateTime a producer's LogAppendTime attribute is cleared.
func TestRaftLogAppendTimeStampedByTheLeader(t *testing.T) {
	pcfg := partition.DefaultConfig()
	pcfg.LogAppendTime = true
	c := newRaftClusterWith(t, 3, pcfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before := time.Now().UnixMilli()
	info, err := c.produce(ctx, "stamped")
	if err != nil {
		t.Fatal(err)
	}
	if info.LogAppendTime < before || info.LogAppendTime > time.Now().UnixMilli() {
		t.Fatalf("log append time %d, produced at %d", info.LogAppendTime, before)
	}
	lead := c.leader()
	retryUntil(t, func() error {
		for _, r := range c.reps {
			if r.HighWatermark() != lead.HighWatermark() {
				return fmt.Errorf("replica %d behind", r.self)
			}
		}
		return nil
	})
	want := readAll(t, lead)
	h, err := recordbatch.ParseHeader(want[0])
	if err != nil || !h.LogAppendTime() || h.MaxTimestamp != info.LogAppendTime || recordbatch.Validate(want[0]) != nil {
		t.Fatalf("leader's batch: LogAppendTime %v, max timestamp %d, want %d; valid: %v", h.LogAppendTime(), h.MaxTimestamp, info.LogAppendTime, recordbatch.Validate(want[0]))
	}
	for id, r := range c.reps {
		if got := readAll(t, r); len(got) != 1 || !bytes.Equal(got[0], want[0]) {
			t.Errorf("replica %d holds other bytes than the leader", id)
		}
	}

	b := batch(1700000000000, "producer-chose")
	binary.BigEndian.PutUint16(b[recordbatch.OffAttributes:], recordbatch.AttrTimestampType)
	recordbatch.SetCRC(b)
	plain := newRaftCluster(t, 3)
	for {
		info, err = plain.leader().Produce(ctx, b, AcksAll)
		if err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil || info.LogAppendTime != -1 {
		t.Fatalf("create-time topic: log append time %d: %v", info.LogAppendTime, err)
	}
	if h, _ := recordbatch.ParseHeader(readAll(t, plain.leader())[0]); h.LogAppendTime() {
		t.Error("a producer's LogAppendTime attribute kept on a create-time topic")
	}
}
