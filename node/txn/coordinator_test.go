package txn

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/spool-log/spool/internal/retry"
)

// memLog is a Log in memory, shared by coordinators as a replicated
// partition is by its leaders.
type memLog struct {
	mu    sync.Mutex
	parts map[int32][][]byte
}

func (l *memLog) Append(p int32, b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.parts[p] = append(l.parts[p], append([]byte(nil), b...))
	return nil
}

func (l *memLog) Replay(p int32, fn func([]byte) error) error {
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

// markers records written markers; while blocked, every write fails.
type markers struct {
	mu      sync.Mutex
	blocked bool
	written map[TopicPartition][]Marker
}

func (m *markers) Write(_ context.Context, tp TopicPartition, mk Marker) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.blocked {
		return errors.New("partition leader unreachable")
	}
	m.written[tp] = append(m.written[tp], mk)
	return nil
}

func (m *markers) get(tp TopicPartition) []Marker {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Marker(nil), m.written[tp]...)
}

func newTestCoordinator(t *testing.T, log *memLog, mk *markers, mod ...func(*Config)) *Coordinator {
	t.Helper()
	var next int64 = 1000
	var mu sync.Mutex
	cfg := Config{
		Partitions:    4,
		AbortInterval: 20 * time.Millisecond,
		AllocateID: func() (int64, error) {
			mu.Lock()
			defer mu.Unlock()
			next++
			return next, nil
		},
		PartitionCount:  func(string) (int32, bool) { return 3, true },
		GroupPartitions: func() int32 { return 50 },
	}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := New(cfg, log, mk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	for p := range int32(4) {
		if err := c.Load(p, 1); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func waitState(t *testing.T, c *Coordinator, id string, want string) {
	t.Helper()
	retry.Run(t, 5*time.Second, func() error {
		d, code := c.Describe(id)
		return retry.Check(code == 0 && d.State.String() == want, "state %s (code %d), want %s", d.State, code, want)
	})
}

func TestCoordinatorLifecycleAndFencing(t *testing.T) {
	log, mk := &memLog{parts: map[int32][][]byte{}}, &markers{written: map[TopicPartition][]Marker{}}
	c := newTestCoordinator(t, log, mk)
	pid, epoch, code := c.InitProducerID("a", time.Minute, -1, -1)
	if code != 0 || epoch != 0 {
		t.Fatalf("init: %d %d %d", pid, epoch, code)
	}
	if _, e2, code := c.InitProducerID("a", time.Minute, pid, epoch); code != 0 || e2 != 1 {
		t.Fatalf("re-init: epoch %d code %d", e2, code)
	}
	// The producer at epoch 0 is a zombie now.
	if _, _, code := c.InitProducerID("a", time.Minute, pid, 0); code != kerr.ProducerFenced.Code {
		t.Fatalf("zombie re-init: code %d", code)
	}
	tps := []TopicPartition{{"t", 0}, {"t", 2}}
	if code, _ := c.AddPartitions("a", pid, 0, tps, false); code != kerr.ProducerFenced.Code {
		t.Fatalf("zombie add partitions: code %d", code)
	}
	if code, _ := c.AddPartitions("a", pid, 1, tps, false); code != 0 {
		t.Fatalf("add partitions: code %d", code)
	}
	if code := c.Verify("a", pid, 1, TopicPartition{"t", 1}); code != kerr.InvalidTxnState.Code {
		t.Fatalf("verify a partition not added: code %d", code)
	}
	if code, _ := c.EndTxn("a", pid, 0, true); code != kerr.ProducerFenced.Code {
		t.Fatalf("zombie commit: code %d", code)
	}
	code, done := c.EndTxn("a", pid, 1, true)
	if code != 0 {
		t.Fatalf("commit: code %d", code)
	}
	<-done
	waitState(t, c, "a", "CompleteCommit")
	for _, tp := range tps {
		if got := mk.get(tp); len(got) != 1 || !got[0].Commit || got[0].Epoch != 1 || got[0].ProducerID != pid || got[0].CoordinatorEpoch != 1 {
			t.Fatalf("markers of %v: %+v", tp, got)
		}
	}
	// A retried commit succeeds; an abort of a committed one is refused.
	if code, _ := c.EndTxn("a", pid, 1, true); code != 0 {
		t.Fatalf("retried commit: code %d", code)
	}
	if code, _ := c.EndTxn("a", pid, 1, false); code != kerr.InvalidTxnState.Code {
		t.Fatalf("abort after commit: code %d", code)
	}
	// Re-init during an ongoing transaction aborts it with the epoch bumped.
	if code, _ := c.AddPartitions("a", pid, 1, tps[:1], false); code != 0 {
		t.Fatal(code)
	}
	if _, _, code := c.InitProducerID("a", time.Minute, -1, -1); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("init over an ongoing transaction: code %d", code)
	}
	waitState(t, c, "a", "CompleteAbort")
	if got := mk.get(tps[0]); len(got) != 2 || got[1].Commit || got[1].Epoch != 2 {
		t.Fatalf("abort marker: %+v", got)
	}
	if _, e, code := c.InitProducerID("a", time.Minute, -1, -1); code != 0 || e != 3 {
		t.Fatalf("init after the abort: epoch %d code %d", e, code)
	}
}

// A coordinator that stored PrepareCommit but could not write the markers
// (its successor finds the Prepare state in the log) is finished by the
// next one to load the partition.
func TestCoordinatorFailoverFinishesMarkers(t *testing.T) {
	log, mk := &memLog{parts: map[int32][][]byte{}}, &markers{written: map[TopicPartition][]Marker{}, blocked: true}
	old := newTestCoordinator(t, log, mk)
	pid, epoch, _ := old.InitProducerID("b", time.Minute, -1, -1)
	tp := TopicPartition{"t", 1}
	if code, _ := old.AddPartitions("b", pid, epoch, []TopicPartition{tp}, false); code != 0 {
		t.Fatal(code)
	}
	if code, _ := old.EndTxn("b", pid, epoch, true); code != 0 {
		t.Fatal(code)
	}
	old.Close() // the old leader dies with its markers unwritten
	if got := mk.get(tp); len(got) != 0 {
		t.Fatalf("markers written while blocked: %+v", got)
	}
	mk.mu.Lock()
	mk.blocked = false
	mk.mu.Unlock()
	next := newTestCoordinator(t, log, mk)
	waitState(t, next, "b", "CompleteCommit")
	if got := mk.get(tp); len(got) != 1 || !got[0].Commit {
		t.Fatalf("markers after failover: %+v", got)
	}
	// The producer goes on with its id and epoch.
	if _, e, code := next.InitProducerID("b", time.Minute, pid, epoch); code != 0 || e != epoch+1 {
		t.Fatalf("init at the new coordinator: epoch %d code %d", e, code)
	}
}

// A transaction past its timeout is aborted with the epoch bumped.
func TestCoordinatorTimesOut(t *testing.T) {
	log, mk := &memLog{parts: map[int32][][]byte{}}, &markers{written: map[TopicPartition][]Marker{}}
	c := newTestCoordinator(t, log, mk)
	pid, epoch, _ := c.InitProducerID("c", 50*time.Millisecond, -1, -1)
	tp := TopicPartition{"t", 0}
	if code, _ := c.AddPartitions("c", pid, epoch, []TopicPartition{tp}, false); code != 0 {
		t.Fatal(code)
	}
	waitState(t, c, "c", "CompleteAbort")
	if got := mk.get(tp); len(got) != 1 || got[0].Commit || got[0].Epoch != epoch+1 {
		t.Fatalf("timeout abort marker: %+v", got)
	}
	if code, _ := c.EndTxn("c", pid, epoch, true); code != kerr.ProducerFenced.Code {
		t.Fatalf("commit after the timeout: code %d", code)
	}
	// KIP-588: the timed-out producer re-initialises with its id and old
	// epoch and goes on; any older epoch is fenced.
	if _, _, code := c.InitProducerID("c", time.Minute, pid, epoch-1); code != kerr.ProducerFenced.Code {
		t.Fatalf("re-init two epochs back: code %d", code)
	}
	if _, e, code := c.InitProducerID("c", time.Minute, pid, epoch); code != 0 || e != epoch+2 {
		t.Fatalf("re-init after the timeout: epoch %d code %d, want %d", e, code, epoch+2)
	}
}

// An idle transactional id with nothing open expires, for good: a
// coordinator replaying the log does not bring it back. An ongoing one
// does not.
func TestCoordinatorExpiresIdleIDs(t *testing.T) {
	log, mk := &memLog{parts: map[int32][][]byte{}}, &markers{written: map[TopicPartition][]Marker{}}
	expiring := func(c *Config) { c.IDExpiration = 200 * time.Millisecond }
	c := newTestCoordinator(t, log, mk, expiring)
	c.InitProducerID("idle", time.Minute, -1, -1)
	pid, epoch, _ := c.InitProducerID("busy", time.Minute, -1, -1)
	if code, _ := c.AddPartitions("busy", pid, epoch, []TopicPartition{{"t", 0}}, false); code != 0 {
		t.Fatal(code)
	}
	retry.Run(t, 5*time.Second, func() error {
		_, code := c.Describe("idle")
		return retry.Check(code == kerr.TransactionalIDNotFound.Code, "idle id: code %d", code)
	})
	if d, code := c.Describe("busy"); code != 0 || d.State != Ongoing {
		t.Fatalf("busy id: %+v code %d", d, code)
	}
	c.Close()
	next := newTestCoordinator(t, log, mk)
	if _, code := next.Describe("idle"); code != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("expired id replayed: code %d", code)
	}
}
