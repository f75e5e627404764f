package group

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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

// DeleteGroups and OffsetDelete let the shard's mu go for their append, as
// a commit does: while one group's tombstones wait for a slow disk, another
// group of the shard heartbeats and commits, and a join of the group being
// deleted is refused (retriable) rather than let in under the deletion.
func TestSlowDeletionAppendBlocksNoOtherGroupOfTheShard(t *testing.T) {
	for _, kind := range []string{"DeleteGroups", "OffsetDelete"} {
		t.Run(kind, func(t *testing.T) {
			h, sl := newSlowHarness(t, "doomed")
			var once sync.Once
			unblock := func() { once.Do(func() { close(sl.release) }) }
			defer unblock()
			wantCode(t, "commit", commitCode(t, h.commit("doomed", "", -1, "t", map[int32]int64{0: 10})), nil)
			ids, gen := h.stableGroup("other", 1)

			sl.mu.Lock()
			sl.armed = true
			sl.mu.Unlock()
			deleted := make(chan int16, 1)
			go func() {
				if kind == "DeleteGroups" {
					r := h.c.DeleteGroups(&kmsg.DeleteGroupsRequest{Version: 2, Groups: []string{"doomed"}})
					deleted <- r.Groups[0].ErrorCode
					return
				}
				od := kmsg.NewPtrOffsetDeleteRequest()
				od.Group = "doomed"
				odt := kmsg.NewOffsetDeleteRequestTopic()
				odt.Topic, odt.Partitions = "t", []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
				od.Topics = append(od.Topics, odt)
				r := h.c.OffsetDelete(od)
				code := r.ErrorCode
				if code == 0 {
					code = r.Topics[0].Partitions[0].ErrorCode
				}
				deleted <- code
			}()
			done(t, "the deletion's append", sl.entered)

			hb := make(chan int16, 1)
			go func() { hb <- h.heartbeat("other", ids[0], gen) }()
			wantCode(t, "heartbeat of another group", done(t, "heartbeat of another group", hb), nil)
			other := make(chan int16, 1)
			go func() { other <- commitCode(t, h.commit("other", ids[0], gen, "t", map[int32]int64{0: 7})) }()
			wantCode(t, "commit of another group", done(t, "commit of another group", other), nil)
			if kind == "DeleteGroups" {
				join := make(chan *kmsg.JoinGroupResponse, 1)
				go func() { join <- h.c.JoinGroup(t.Context(), Client{ID: "client"}, joinReq("doomed", "", 4)) }()
				if r := done(t, "join of the group being deleted", join); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
					t.Fatalf("join of the group being deleted: %s, want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(r.ErrorCode))
				}
			}
			select {
			case code := <-deleted:
				t.Fatalf("the deletion answered (%d) before its append was stored", code)
			default:
			}
			unblock()
			wantCode(t, kind, done(t, kind, deleted), nil)
			if got := h.fetch("doomed", "t", 0)[0]; got != -1 {
				t.Fatalf("after %s the offset is still %d", kind, got)
			}
		})
	}
}
