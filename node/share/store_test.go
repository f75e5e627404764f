package share

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// memStoreLog is a StoreLog in memory.
type memStoreLog struct {
	mu    sync.Mutex
	parts map[int32][][]byte
	fail  error
}

func (l *memStoreLog) Append(p int32, b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	if l.parts == nil {
		l.parts = map[int32][][]byte{}
	}
	l.parts[p] = append(l.parts[p], append([]byte(nil), b...))
	return nil
}

func (l *memStoreLog) Replay(p int32, fn func([]byte) error) error {
	l.mu.Lock()
	bs := append([][]byte(nil), l.parts[p]...)
	l.mu.Unlock()
	for _, b := range bs {
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

func loadedStore(t *testing.T, log *memStoreLog, epoch int32) *Store {
	t.Helper()
	st := NewStore(log, 4)
	for p := range int32(4) {
		if err := st.Load(p, epoch); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// TestShareStateSurvivesFailover: acknowledgements are durable before they
// are answered; a new leader (a new Partitions in a newer epoch, over a
// store reloaded from its log) redelivers only what was not acknowledged,
// with its delivery count kept.
func TestShareStateSurvivesFailover(t *testing.T) {
	slog := &memStoreLog{}
	h := newHarness(t, nil)
	h.p.persist = loadedStore(t, slog, 1)
	h.log.add(10, 0, -1)
	h.log.epoch = 3
	f := h.fetch("a", 100)
	if count(f.Ranges) != 10 {
		t.Fatal(f.Ranges)
	}
	if e := h.ack("a", 0, 3, AckAccept); e != nil {
		t.Fatal(e)
	}
	if e := h.ack("a", 4, 4, AckReject); e != nil {
		t.Fatal(e)
	}
	if e := h.ack("a", 5, 5, AckRelease); e != nil {
		t.Fatal(e)
	}
	if e := h.ack("a", 8, 8, AckAccept); e != nil {
		t.Fatal(e)
	}
	// Failover: the old leader's memory is gone, the store's leader
	// moved too (it replays the log).
	h2 := newHarness(t, nil)
	h2.p.persist = loadedStore(t, slog, 2)
	h2.log = h.log
	h2.log.epoch = 4
	f = h2.fetch("b", 100)
	got := map[int64]int16{}
	for _, r := range f.Ranges {
		for o := r.First; o <= r.Last; o++ {
			got[o] = r.DeliveryCount
		}
	}
	want := map[int64]int16{5: 2, 6: 2, 7: 2, 9: 2}
	if len(got) != len(want) {
		t.Fatalf("after failover got %v, want %v", got, want)
	}
	for o, c := range want {
		if got[o] != c {
			t.Errorf("offset %d: delivery count %d, want %d (got %v)", o, got[o], c, got)
		}
	}
	// The deposed leader, still believing it leads, is refused.
	if e := h.ack("a", 6, 6, AckAccept); e == nil {
		t.Fatal("the deposed leader's acknowledgement was accepted")
	}
}

// TestShareAckFailsWhenNotDurable: an acknowledgement the store cannot
// take is answered with an error and changes nothing; the member still
// holds the records and acknowledges them once the store is back.
func TestShareAckFailsWhenNotDurable(t *testing.T) {
	slog := &memStoreLog{}
	h := newHarness(t, nil)
	h.p.persist = loadedStore(t, slog, 1)
	h.log.add(3, 0, -1)
	h.fetch("a", 100)
	slog.fail = errors.New("disk full")
	if e := h.ack("a", 0, 2, AckAccept); e != kerr.CoordinatorNotAvailable {
		t.Fatalf("ack with the store failing: %v", e)
	}
	if st, _, _ := h.p.parts[h.key].stateAt(0); st != Acquired {
		t.Fatalf("offset 0 is %v after a failed ack", st)
	}
	slog.fail = nil
	if e := h.ack("a", 0, 2, AckAccept); e != nil {
		t.Fatal(e)
	}
	if spso, _ := h.p.StartOffset(h.key); spso != 3 {
		t.Fatalf("spso %d", spso)
	}
}

func TestShareStoreFencesOlderEpochs(t *testing.T) {
	slog := &memStoreLog{}
	st := loadedStore(t, slog, 1)
	k := Key{Group: "g", TopicPartition: TopicPartition{Partition: 2}}
	if err := st.Write(k, Snapshot{Epoch: 5, SPSO: 10}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Claim(k, 4); !errors.Is(err, ErrFenced) {
		t.Fatalf("claim from an older epoch: %v", err)
	}
	snap, ok, err := st.Claim(k, 6)
	if err != nil || !ok || snap.SPSO != 10 {
		t.Fatalf("claim: %+v %v %v", snap, ok, err)
	}
	if err := st.Write(k, Snapshot{Epoch: 5, SPSO: 11}); !errors.Is(err, ErrFenced) {
		t.Fatalf("write from epoch 5 after epoch 6's claim: %v", err)
	}
	// A stale write that reached the log after a newer one does not win
	// on replay.
	if err := st.Write(k, Snapshot{Epoch: 6, SPSO: 12}); err != nil {
		t.Fatal(err)
	}
	_ = slog.Append(st.Partition(k), encodeStateBatch(stateKey(k), Snapshot{Epoch: 5, SPSO: 99}.Encode()))
	st2 := loadedStore(t, slog, 2)
	if snap, ok, err := st2.Claim(k, 6); err != nil || !ok || snap.SPSO != 12 {
		t.Fatalf("after replay: %+v %v %v", snap, ok, err)
	}
}

// TestShareLastDeliveryDurableBeforeItLeaves: a record's last delivery
// (the delivery limit reached) is written before the fetch returns it, so
// a leader failover while it is out does not deliver it once more: the
// new leader finds it archived. Earlier deliveries are not written on
// their own (a lost one leaves the count one low, as in Kafka).
func TestShareLastDeliveryDurableBeforeItLeaves(t *testing.T) {
	slog := &memStoreLog{}
	h := newHarness(t, func(_ *Config, gc *GroupConfig) { gc.LockDuration, gc.DeliveryLimit = 2*time.Second, 2 })
	h.p.persist = loadedStore(t, slog, 1)
	h.log.add(1, 0, -1)
	h.log.epoch = 3
	if f := h.fetch("a", 100); count(f.Ranges) != 1 || f.Ranges[0].DeliveryCount != 1 {
		t.Fatalf("first delivery %v", f.Ranges)
	}
	h.clock = h.clock.Add(3 * time.Second) // a's lock lapses
	if f := h.fetch("b", 100); count(f.Ranges) != 1 || f.Ranges[0].DeliveryCount != 2 {
		t.Fatalf("second (last) delivery %v", f.Ranges)
	}
	// Failover while b holds it: the new leader must not deliver it a
	// third time.
	h2 := newHarness(t, func(_ *Config, gc *GroupConfig) { gc.LockDuration, gc.DeliveryLimit = 2*time.Second, 2 })
	h2.p.persist = loadedStore(t, slog, 2)
	h2.log = h.log
	h2.log.epoch = 4
	if f := h2.fetch("c", 100); len(f.Ranges) != 0 {
		t.Fatalf("after failover the record at its delivery limit was delivered again: %v", f.Ranges)
	}
	if spso, _ := h2.p.StartOffset(h2.key); spso != 1 {
		t.Fatalf("after failover the start offset is %d, want 1 (past the archived record)", spso)
	}
}

// TestShareLastDeliveryNotSentWhenNotDurable: when the last delivery
// cannot be written, the fetch fails and sends nothing; the record stays
// with the member unsent and is archived when its lock lapses (its
// delivery spent, as the limit counts attempts).
func TestShareLastDeliveryNotSentWhenNotDurable(t *testing.T) {
	slog := &memStoreLog{}
	h := newHarness(t, func(_ *Config, gc *GroupConfig) { gc.LockDuration, gc.DeliveryLimit = 2*time.Second, 1 })
	h.p.persist = loadedStore(t, slog, 1)
	h.log.epoch = 3
	if f := h.fetch("a", 100); len(f.Ranges) != 0 { // loads the empty partition
		t.Fatalf("fetched %v from an empty log", f.Ranges)
	}
	h.log.add(1, 0, -1)
	slog.fail = errors.New("disk full")
	f, e := h.p.Fetch(h.key, "a", h.log, 100, 1<<20)
	if e != kerr.CoordinatorNotAvailable || len(f.Ranges) != 0 || len(f.Records) != 0 {
		t.Fatalf("last delivery with the store failing: %v, %+v", e, f)
	}
	slog.fail = nil
	h.clock = h.clock.Add(3 * time.Second)
	if f := h.fetch("b", 100); len(f.Ranges) != 0 {
		t.Fatalf("delivered past the limit of 1: %v", f.Ranges)
	}
	if spso, _ := h.p.StartOffset(h.key); spso != 1 || h.p.Stats.Archived.Load() != 1 {
		t.Fatalf("start offset %d, %d archived; want 1 and 1 (offset 0 archived)", spso, h.p.Stats.Archived.Load())
	}
}
