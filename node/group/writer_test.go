package group

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// slowLog is a MemLog whose appends of batches naming one group wait, once
// armed, until released: a disk slow to answer for one group's commit.
type slowLog struct {
	*MemLog
	group   []byte
	mu      sync.Mutex
	armed   bool
	entered chan struct{}
	release chan struct{}
}

func (l *slowLog) Append(p int32, batch []byte) error {
	l.mu.Lock()
	hold := l.armed && bytes.Contains(batch, l.group)
	if hold {
		l.armed = false
	}
	l.mu.Unlock()
	if hold {
		close(l.entered)
		<-l.release
	}
	return l.MemLog.Append(p, batch)
}

// newSlowHarness is a harness whose coordinator has one shard, over a
// slowLog holding up appends for group.
func newSlowHarness(t *testing.T, group string) (*harness, *slowLog) {
	h := &harness{t: t, log: NewMemLog(), clock: newManualClock()}
	h.cfg = DefaultConfig()
	h.cfg.Partitions = 1 // every group in one shard
	h.cfg.InitialRebalanceDelay = 0
	h.cfg.MinSessionTimeout = time.Millisecond
	h.cfg.Clock = h.clock
	sl := &slowLog{MemLog: h.log, group: []byte(group), entered: make(chan struct{}), release: make(chan struct{})}
	c, err := New(h.cfg, sl)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Load(0); err != nil {
		t.Fatal(err)
	}
	h.c = c
	t.Cleanup(c.Close)
	return h, sl
}

// done polls, with a deadline, until ch has a value.
func done[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case v := <-ch:
			return v
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still blocked", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSlowCommitAppendBlocksNoOtherGroupOfTheShard(t *testing.T) {
	h, sl := newSlowHarness(t, "slow-group")
	var once sync.Once
	unblock := func() { once.Do(func() { close(sl.release) }) }
	defer unblock()
	ids, gen := h.stableGroup("other", 1)

	sl.mu.Lock()
	sl.armed = true
	sl.mu.Unlock()
	slow := make(chan int16, 1)
	go func() { slow <- commitCode(t, h.commit("slow-group", "", -1, "t", map[int32]int64{0: 10})) }()
	done(t, "the slow commit's append", sl.entered)

	hb := make(chan int16, 1)
	go func() { hb <- h.heartbeat("other", ids[0], gen) }()
	wantCode(t, "heartbeat of another group", done(t, "heartbeat of another group", hb), nil)
	other := make(chan int16, 1)
	go func() { other <- commitCode(t, h.commit("other", ids[0], gen, "t", map[int32]int64{0: 7})) }()
	wantCode(t, "commit of another group", done(t, "commit of another group", other), nil)
	fetched := make(chan map[int32]int64, 1)
	go func() { fetched <- h.fetch("slow-group", "t", 0) }()
	if got := done(t, "fetch of the slow group", fetched)[0]; got != -1 {
		t.Fatalf("a commit not yet stored is visible: fetch gives %d", got)
	}

	// A second commit of the slow group waits for the first and lands after it.
	second := make(chan int16, 1)
	go func() { second <- commitCode(t, h.commit("slow-group", "", -1, "t", map[int32]int64{0: 20})) }()
	waiting := make(chan struct{})
	go func() {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			h.c.mu.RLock()
			s := h.c.shards[0]
			h.c.mu.RUnlock()
			s.mu.Lock()
			w := s.writers["slow-group"]
			n := 0
			if w != nil {
				n = w.refs
			}
			s.mu.Unlock()
			if n == 2 {
				close(waiting)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	done(t, "the second commit waiting for the group's writer", waiting)
	unblock()
	wantCode(t, "slow commit", done(t, "slow commit", slow), nil)
	wantCode(t, "second commit", done(t, "second commit", second), nil)
	if got := h.fetch("slow-group", "t", 0)[0]; got != 20 {
		t.Fatalf("after both commits fetch gives %d, want 20", got)
	}
	h.start() // replay: the log holds them in the same order
	if got := h.fetch("slow-group", "t", 0)[0]; got != 20 {
		t.Fatalf("after replay fetch gives %d, want 20", got)
	}
	if got := h.fetch("other", "t", 0)[0]; got != 7 {
		t.Fatalf("other group after replay: %d, want 7", got)
	}
}

func TestCommitStoreFailureAfterUnlockedAppend(t *testing.T) {
	h, _ := newSlowHarness(t, "none")
	h.log.SetFailAppends(kerr.NotLeaderForPartition)
	wantCode(t, "commit to a failing log", commitCode(t, h.commit("g", "", -1, "t", map[int32]int64{0: 5})), kerr.NotCoordinator)
	h.log.SetFailAppends(nil)
	if got := h.fetch("g", "t", 0)[0]; got != -1 {
		t.Fatalf("a failed commit is visible: %d", got)
	}
}
