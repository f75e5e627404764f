package share

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/spool-log/spool/internal/recordbatch"
)

// fakeLog is a log of batches in memory: batch i holds offsets
// [base, base+n) as its fields say.
type fakeLog struct {
	batches []Batch
	start   int64
	hw, lso int64
	aborted []Aborted
	reads   int
	epoch   int32
}

func (l *fakeLog) add(n int, attrs int16, pid int64) {
	base := int64(0)
	if k := len(l.batches); k > 0 {
		base = l.batches[k-1].Header.LastOffset() + 1
	}
	h := recordbatch.Header{BaseOffset: base, LastOffsetDelta: int32(n - 1), Attributes: attrs, ProducerID: pid, NumRecords: int32(n), Magic: 2}
	l.batches = append(l.batches, Batch{Header: h, Raw: []byte(fmt.Sprintf("batch@%d;", base))})
	l.hw = base + int64(n)
	l.lso = l.hw
}

func (l *fakeLog) Bounds(rc bool) (int64, int64, error) {
	if rc {
		return l.start, l.lso, nil
	}
	return l.start, l.hw, nil
}

func (l *fakeLog) Read(from, upTo int64, maxBytes int) ([]Batch, error) {
	l.reads++
	var out []Batch
	size := 0
	for _, b := range l.batches {
		if b.Header.LastOffset() < from || b.Header.BaseOffset >= upTo {
			continue
		}
		if len(out) > 0 && size+len(b.Raw) > maxBytes {
			break
		}
		out = append(out, b)
		size += len(b.Raw)
	}
	return out, nil
}

func (l *fakeLog) Aborted(from, to int64) []Aborted { return l.aborted }

func (l *fakeLog) LeaderEpoch() int32 { return l.epoch }

type harness struct {
	t     *testing.T
	p     *Partitions
	clock time.Time
	log   *fakeLog
	key   Key
	gc    GroupConfig
	// persist, set before newHarness's Partitions is made (withPersist).
	persist Persister
}

func newHarness(t *testing.T, mut func(*Config, *GroupConfig)) *harness {
	cfg := DefaultConfig()
	gc := DefaultGroupConfig()
	gc.ResetEarliest = true
	if mut != nil {
		mut(&cfg, &gc)
	}
	h := &harness{t: t, clock: time.Unix(1000, 0), log: &fakeLog{}, key: Key{Group: "g", TopicPartition: TopicPartition{Partition: 0}}, gc: gc}
	h.p = NewPartitions(cfg, func(string) GroupConfig { return h.gc }, h.persist)
	h.p.now = func() time.Time { return h.clock }
	return h
}

func (h *harness) fetch(member string, max int) Fetched {
	h.t.Helper()
	f, e := h.p.Fetch(h.key, member, h.log, max, 1<<20)
	if e != nil {
		h.t.Fatalf("fetch: %v", e)
	}
	return f
}

func count(rs []Range) int {
	n := 0
	for _, r := range rs {
		n += int(r.Last - r.First + 1)
	}
	return n
}

func (h *harness) ack(member string, first, last int64, typ int8) *kerr.Error {
	return h.p.Acknowledge(h.key, member, h.log, []AckBatch{{First: first, Last: last, Types: []int8{typ}}}, true)
}

func TestShareAcquireSplitsRecordsAmongMembers(t *testing.T) {
	h := newHarness(t, nil)
	h.log.add(10, 0, -1)
	a := h.fetch("a", 4)
	b := h.fetch("b", 100)
	if count(a.Ranges) != 4 || a.Ranges[0].First != 0 || count(b.Ranges) != 6 || b.Ranges[0].First != 4 {
		t.Fatalf("a %v b %v", a.Ranges, b.Ranges)
	}
	if c := h.fetch("c", 100); len(c.Ranges) != 0 {
		t.Fatalf("c got %v with everything acquired", c.Ranges)
	}
	// b may not acknowledge a's records; a's acks advance the SPSO.
	if e := h.ack("b", 0, 3, AckAccept); e != kerr.InvalidRecordState {
		t.Fatalf("ack of another's records: %v", e)
	}
	if e := h.ack("a", 0, 3, AckAccept); e != nil {
		t.Fatal(e)
	}
	if spso, _ := h.p.StartOffset(h.key); spso != 4 {
		t.Fatalf("spso %d, want 4", spso)
	}
	// Acknowledging twice is refused: the record is no longer held.
	if e := h.ack("b", 4, 4, AckAccept); e != nil {
		t.Fatal(e)
	}
	if e := h.ack("b", 4, 4, AckAccept); e == nil {
		t.Fatal("second acknowledgement of offset 4 accepted")
	}
}

func TestShareLockExpiryRedeliversAndArchivesAtLimit(t *testing.T) {
	h := newHarness(t, func(_ *Config, gc *GroupConfig) { gc.LockDuration, gc.DeliveryLimit = 2*time.Second, 3 })
	h.log.add(5, 0, -1)
	if f := h.fetch("a", 100); count(f.Ranges) != 5 || f.Ranges[0].DeliveryCount != 1 {
		t.Fatalf("%v", f.Ranges)
	}
	if next := h.p.NextExpiry("g", []TopicPartition{h.key.TopicPartition}); !next.Equal(h.clock.Add(2 * time.Second)) {
		t.Fatalf("next expiry %v", next)
	}
	h.clock = h.clock.Add(1 * time.Second)
	if f := h.fetch("b", 100); len(f.Ranges) != 0 {
		t.Fatalf("redelivered before the lock lapsed: %v", f.Ranges)
	}
	h.clock = h.clock.Add(1500 * time.Millisecond)
	f := h.fetch("b", 100)
	if count(f.Ranges) != 5 || f.Ranges[0].DeliveryCount != 2 {
		t.Fatalf("after expiry: %v", f.Ranges)
	}
	if h.p.Stats.LockExpiries.Load() != 5 || h.p.Stats.Redelivered.Load() != 5 {
		t.Fatalf("expiries %d redelivered %d", h.p.Stats.LockExpiries.Load(), h.p.Stats.Redelivered.Load())
	}
	// a's lock is gone: its late acknowledgement is refused.
	if e := h.ack("a", 0, 4, AckAccept); e != kerr.InvalidRecordState {
		t.Fatalf("late ack: %v", e)
	}
	// Released at the third delivery: archived, never delivered again.
	if e := h.ack("b", 0, 4, AckRelease); e != nil {
		t.Fatal(e)
	}
	if f := h.fetch("c", 100); count(f.Ranges) != 5 || f.Ranges[0].DeliveryCount != 3 {
		t.Fatalf("third delivery: %v", f.Ranges)
	}
	if e := h.ack("c", 0, 4, AckRelease); e != nil {
		t.Fatal(e)
	}
	if f := h.fetch("d", 100); len(f.Ranges) != 0 {
		t.Fatalf("delivered past the limit: %v", f.Ranges)
	}
	if spso, _ := h.p.StartOffset(h.key); spso != 5 || h.p.Stats.Archived.Load() != 5 {
		t.Fatalf("spso %d archived %d", spso, h.p.Stats.Archived.Load())
	}
}

func TestShareWindowBoundsAcquisition(t *testing.T) {
	h := newHarness(t, func(c *Config, _ *GroupConfig) { c.MaxInFlight = 8 })
	for range 5 {
		h.log.add(4, 0, -1)
	}
	if f := h.fetch("a", 100); count(f.Ranges) != 8 {
		t.Fatalf("acquired %d past a window of 8", count(f.Ranges))
	}
	if f := h.fetch("b", 100); len(f.Ranges) != 0 {
		t.Fatalf("window full, still acquired %v", f.Ranges)
	}
	// Acknowledging the first two records lets two more in.
	if e := h.ack("a", 0, 1, AckAccept); e != nil {
		t.Fatal(e)
	}
	if f := h.fetch("b", 100); count(f.Ranges) != 2 || f.Ranges[0].First != 8 {
		t.Fatalf("after ack: %v", f.Ranges)
	}
	// An acknowledgement in the middle does not move the SPSO.
	if e := h.ack("a", 3, 3, AckAccept); e != nil {
		t.Fatal(e)
	}
	if spso, _ := h.p.StartOffset(h.key); spso != 2 {
		t.Fatalf("spso %d", spso)
	}
}

func TestShareReadCommittedArchivesAbortedAndControl(t *testing.T) {
	h := newHarness(t, func(_ *Config, gc *GroupConfig) { gc.ReadCommitted = true })
	const txn, ctl = recordbatch.AttrTransactional, recordbatch.AttrControl
	h.log.add(2, 0, -1)      // 0-1 plain
	h.log.add(3, txn, 7)     // 2-4 aborted
	h.log.add(1, txn|ctl, 7) // 5 abort marker
	h.log.add(2, txn, 8)     // 6-7 committed
	h.log.add(1, txn|ctl, 8) // 8 commit marker
	h.log.aborted = []Aborted{{ProducerID: 7, FirstOffset: 2}}
	f := h.fetch("a", 100)
	got := map[int64]bool{}
	for _, r := range f.Ranges {
		for o := r.First; o <= r.Last; o++ {
			got[o] = true
		}
	}
	for _, o := range []int64{0, 1, 6, 7} {
		if !got[o] {
			t.Errorf("offset %d not delivered", o)
		}
	}
	for _, o := range []int64{2, 3, 4, 5, 8} {
		if got[o] {
			t.Errorf("offset %d (aborted or control) delivered", o)
		}
	}
	if e := h.ack("a", 0, 1, AckAccept); e != nil {
		t.Fatal(e)
	}
	if spso, _ := h.p.StartOffset(h.key); spso != 6 {
		t.Fatalf("spso %d: the archived aborted records should be passed", spso)
	}
}

func TestShareLatestResetAndLogStartClamp(t *testing.T) {
	h := newHarness(t, func(_ *Config, gc *GroupConfig) { gc.ResetEarliest = false })
	h.log.add(5, 0, -1)
	if f := h.fetch("a", 100); len(f.Ranges) != 0 {
		t.Fatalf("latest reset delivered old records %v", f.Ranges)
	}
	h.log.add(2, 0, -1)
	if f := h.fetch("a", 100); count(f.Ranges) != 2 || f.Ranges[0].First != 5 {
		t.Fatalf("%v", f.Ranges)
	}
	h.log.start = 6 // retention took offset 5
	h.log.add(1, 0, -1)
	f := h.fetch("b", 100)
	if count(f.Ranges) != 1 || f.Ranges[0].First != 7 {
		t.Fatalf("after the clamp: %v", f.Ranges)
	}
	if spso, _ := h.p.StartOffset(h.key); spso != 6 {
		t.Fatalf("spso %d", spso)
	}
}

func TestShareSessionEpochsAndCloseReleases(t *testing.T) {
	h := newHarness(t, nil)
	h.log.add(3, 0, -1)
	tp := h.key.TopicPartition
	if _, e := h.p.Session("g", "a", 1, nil, nil); e != kerr.ShareSessionNotFound {
		t.Fatalf("no session: %v", e)
	}
	if _, e := h.p.Session("g", "a", 0, []TopicPartition{tp}, nil); e != nil {
		t.Fatal(e)
	}
	if _, e := h.p.Session("g", "a", 2, nil, nil); e != kerr.InvalidShareSessionEpoch {
		t.Fatalf("wrong epoch: %v", e)
	}
	parts, e := h.p.Session("g", "a", 1, nil, nil)
	if e != nil || len(parts) != 1 {
		t.Fatalf("%v %v", parts, e)
	}
	if e := h.p.CheckSession("g", "a", 2); e != nil {
		t.Fatal(e)
	}
	h.fetch("a", 100)
	if e := h.p.CloseSession("g", "a"); e != nil {
		t.Fatal(e)
	}
	if f := h.fetch("b", 100); count(f.Ranges) != 3 || f.Ranges[0].DeliveryCount != 2 {
		t.Fatalf("closing a's session should release its records: %v", f.Ranges)
	}
}

func TestShareAckValidation(t *testing.T) {
	h := newHarness(t, nil)
	h.log.add(4, 0, -1)
	h.fetch("a", 100)
	for _, b := range [][]AckBatch{
		{{First: 2, Last: 1, Types: []int8{1}}},                                        // first > last
		{{First: 0, Last: 1, Types: []int8{1, 1, 1}}},                                  // types do not match the range
		{{First: 0, Last: 1, Types: nil}},                                              // no type
		{{First: 0, Last: 1, Types: []int8{9}}},                                        // unknown type
		{{First: 0, Last: 1, Types: []int8{1}}, {First: 1, Last: 2, Types: []int8{1}}}, // overlapping
	} {
		if e := h.p.Acknowledge(h.key, "a", h.log, b, false); e != kerr.InvalidRequest {
			t.Errorf("%v: %v, want INVALID_REQUEST", b, e)
		}
	}
	if e := h.p.Acknowledge(h.key, "a", h.log, []AckBatch{{First: 0, Last: 0, Types: []int8{AckRenew}}}, false); e != kerr.InvalidRequest {
		t.Errorf("renew before v2: %v", e)
	}
	// All or none: the second batch fails, so the first is not applied.
	if e := h.p.Acknowledge(h.key, "a", h.log, []AckBatch{{First: 0, Last: 0, Types: []int8{1}}, {First: 3, Last: 9, Types: []int8{1}}}, false); e == nil {
		t.Fatal("a batch past the window accepted")
	}
	if st, _, _ := h.p.parts[h.key].stateAt(0); st != Acquired {
		t.Fatalf("offset 0 is %v after a refused request", st)
	}
	if e := h.p.Acknowledge(h.key, "a", h.log, []AckBatch{{First: 0, Last: 3, Types: []int8{1, 2, 3, 0}}}, false); e != nil {
		t.Fatal(e)
	}
	for o, want := range []State{Acknowledged, Available, Archived, Archived} {
		if st, _, ok := h.p.parts[h.key].stateAt(int64(o)); ok && st != want {
			t.Errorf("offset %d: %v, want %v", o, st, want)
		}
	}
}

// TestShareIdleSessionsMakeRoom: sessions of members that vanished
// without closing them do not fill the table for good: once idle past the
// session timeout they are dropped, their records released, when a new
// session needs the room.
func TestShareIdleSessionsMakeRoom(t *testing.T) {
	h := newHarness(t, func(c *Config, _ *GroupConfig) { c.MaxSessions = 2 })
	h.log.add(4, 0, -1)
	tp := []TopicPartition{h.key.TopicPartition}
	for _, m := range []string{"a", "b"} {
		if _, e := h.p.Session("g", m, 0, tp, nil); e != nil {
			t.Fatal(e)
		}
	}
	h.fetch("a", 4)
	if _, e := h.p.Session("g", "c", 0, tp, nil); e != kerr.ShareSessionLimitReached {
		t.Fatalf("third session while two are live: %v", e)
	}
	h.clock = h.clock.Add(DefaultConfig().SessionTimeout + time.Second)
	if _, e := h.p.Session("g", "c", 0, tp, nil); e != nil {
		t.Fatalf("third session after the others went idle: %v", e)
	}
	if f := h.fetch("c", 10); count(f.Ranges) != 4 {
		t.Fatalf("a's records not released with its idle session: %v", f.Ranges)
	}
}
