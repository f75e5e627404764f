package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/partition"
)

// history is an acks=all producer's record of what was acknowledged, run
// beside a test until stopped: values "v<n>" in order, one at a time,
// each retried on the errors a client retries until acknowledged.
type history struct {
	c       *raftCluster
	mu      sync.Mutex
	acked   []int
	errs    []error
	stop    chan struct{}
	done    chan struct{}
	retries int
}

func (c *raftCluster) writable() *Replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.reps {
		if _, ok := r.WritableEpoch(); ok {
			return r
		}
	}
	return nil
}

func startHistory(c *raftCluster) *history {
	h := &history{c: c, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		for n := 0; ; {
			select {
			case <-h.stop:
				return
			default:
			}
			r := c.writable()
			if r == nil {
				time.Sleep(2 * time.Millisecond) // no leader yet: as a client backs off
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := r.Produce(ctx, batch(1700000000000, "v"+strconv.Itoa(n)), AcksAll)
			cancel()
			h.mu.Lock()
			switch {
			case err == nil:
				h.acked = append(h.acked, n)
				n++
			case errors.Is(err, ErrNotLeader), errors.Is(err, ErrOutcomeUnknown), errors.Is(err, partition.ErrClosed):
				h.retries++
			default:
				h.errs = append(h.errs, err)
			}
			h.mu.Unlock()
		}
	}()
	return h
}

// waitAcked waits until n more values are acknowledged.
func (h *history) waitAcked(t *testing.T, n int) {
	t.Helper()
	h.mu.Lock()
	want := len(h.acked) + n
	h.mu.Unlock()
	retryUntil(t, func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.acked) < want {
			return fmt.Errorf("%d values acknowledged, waiting for %d", len(h.acked), want)
		}
		return nil
	})
}

func (h *history) finish(t *testing.T) []int {
	t.Helper()
	close(h.stop)
	<-h.done
	if len(h.errs) > 0 {
		t.Fatalf("producer saw errors no client retries: %v", h.errs)
	}
	return h.acked
}

// values are the record values of r's committed log, in order.
func values(t *testing.T, r *Replica) []string {
	t.Helper()
	var out []string
	for _, b := range readAll(t, r) {
		hd, err := recordbatch.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := recordbatch.ParseRecords(nil, b[recordbatch.HeaderSize:hd.Size()], hd.NumRecords, hd.LastOffsetDelta)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			out = append(out, string(rec.Value))
		}
	}
	return out
}

// checkHistory: every acknowledged value is in r's log, in the order
// acknowledged (a retry whose first try landed may add a duplicate).
func checkHistory(t *testing.T, r *Replica, acked []int) {
	t.Helper()
	first := map[string]int{}
	for i, v := range values(t, r) {
		if _, ok := first[v]; !ok {
			first[v] = i
		}
	}
	last := -1
	for _, n := range acked {
		pos, ok := first["v"+strconv.Itoa(n)]
		if !ok {
			t.Fatalf("replica %d lost acknowledged value v%d", r.self, n)
		}
		if pos < last {
			t.Fatalf("replica %d holds v%d before an earlier acknowledged value", r.self, n)
		}
		last = pos
	}
}

func waitConf(t *testing.T, r *Replica, want Conf) {
	t.Helper()
	retryUntil(t, func() error {
		got, _ := r.Conf()
		if !slices.Equal(got.Voters, want.Voters) || !slices.Equal(got.VotersOutgoing, want.VotersOutgoing) || !slices.Equal(got.Learners, want.Learners) {
			return fmt.Errorf("replica %d: configuration %+v, want %+v", r.self, got, want)
		}
		return nil
	})
}

// changeConf retries a change on whichever replica leads until it applies,
// as the node's reassignment driver does: an outcome unknown is checked
// against the configuration.
// addLearner adds broker id to the group as a learner, from an empty
// directory, and starts its replica joining.
func (c *raftCluster) addLearner(t *testing.T, id int32) {
	t.Helper()
	c.joining = map[int32]bool{id: true}
	c.dirs[id] = t.TempDir()
	c.changeConf(t, func(cf Conf) bool { return slices.Contains(cf.Learners, id) }, func(ctx context.Context, r *Replica) error {
		return r.ChangeConf(ctx, ConfChange{AddLearner, id})
	})
	c.start(id)
	c.ids = append(c.ids, id)
}

func (c *raftCluster) changeConf(t *testing.T, done func(Conf) bool, change func(ctx context.Context, r *Replica) error) {
	t.Helper()
	retryUntil(t, func() error {
		r := c.writable()
		if r == nil {
			return errors.New("no leader")
		}
		if conf, _ := r.Conf(); done(conf) {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if err := change(ctx, r); err != nil {
			return err
		}
		return nil
	})
}

// A partition moves from {0,1,2} to {1,2,3} by Raft membership changes
// under a steady acks=all producer: broker 3 joins empty as a learner and
// catches up from the snapshot, restarts while catching up, is promoted in
// a joint configuration while 0 leaves (leadership handed off first), a
// follower restarts inside the joint configuration and restores it from
// its sidecar, the joint configuration is left, and the old replica stops.
// Every acknowledged value is on every remaining replica, in order, and
// the configuration survives a restart of the whole group.
func TestRaftMovesAReplicaByConfChanges(t *testing.T) {
	c := newRaftCluster(t, 3)
	c.joining = map[int32]bool{3: true}
	c.dirs[3] = t.TempDir()
	h := startHistory(c)
	h.waitAcked(t, 30)
	lead := c.leader()

	// Refusals: a change on a follower, and the leader removing itself.
	for _, id := range c.ids {
		if r := c.reps[id]; r != lead {
			if err := r.ChangeConf(context.Background(), ConfChange{AddLearner, 3}); !errors.Is(err, ErrNotLeader) {
				t.Fatalf("a follower's change: %v, want ErrNotLeader", err)
			}
			break
		}
	}
	if err := lead.ChangeConf(context.Background(), ConfChange{RemoveMember, lead.self}); !errors.Is(err, ErrLeaderLeaving) {
		t.Fatalf("the leader removing itself: %v, want ErrLeaderLeaving", err)
	}

	for _, id := range c.ids {
		c.reps[id].SetReplicas([]int32{1, 2, 3})
	}
	// The learner is added before its node opens it: not caught up.
	c.changeConf(t, func(cf Conf) bool { return slices.Contains(cf.Learners, 3) }, func(ctx context.Context, r *Replica) error {
		return r.ChangeConf(ctx, ConfChange{AddLearner, 3})
	})
	h.waitAcked(t, 10)
	if r := c.writable(); r != nil && r.CaughtUp(3) {
		t.Fatal("a learner nobody opened counts as caught up")
	}
	c.start(3)
	c.ids = append(c.ids, 3)
	c.reps[3].SetReplicas([]int32{1, 2, 3})
	h.waitAcked(t, 10)
	// The learner restarts while it catches up: it keeps its Raft state.
	c.stop(3)
	h.waitAcked(t, 10)
	c.start(3)
	retryUntil(t, func() error {
		r := c.writable()
		if r == nil || !r.CaughtUp(3) {
			return errors.New("learner 3 not caught up")
		}
		return nil
	})
	waitConf(t, c.reps[3], Conf{Voters: []int32{0, 1, 2}, Learners: []int32{3}})
	if c.reps[3].IsLeader() {
		t.Fatal("a learner leads")
	}

	// Leadership off broker 0 before it goes. SetReplicas made 1 the
	// preferred leader; the transfer is asked for all the same.
	retryUntil(t, func() error {
		r := c.writable()
		if r == nil {
			return errors.New("no leader")
		}
		if r.self == 0 {
			r.TransferLeadership(1)
			return errors.New("0 still leads")
		}
		return nil
	})
	c.changeConf(t, func(cf Conf) bool { return cf.Joint() || !slices.Contains(cf.Voters, 0) }, func(ctx context.Context, r *Replica) error {
		return r.ChangeConf(ctx, ConfChange{AddVoter, 3}, ConfChange{RemoveMember, 0})
	})
	h.waitAcked(t, 10)
	// A follower restarts inside the joint configuration.
	var f int32 = -1
	for _, id := range []int32{1, 2, 3} {
		if !c.reps[id].IsLeader() {
			f = id
			break
		}
	}
	c.stop(f)
	c.start(f)
	waitConf(t, c.reps[f], Conf{Voters: []int32{1, 2, 3}, VotersOutgoing: []int32{0, 1, 2}})
	h.waitAcked(t, 10)
	c.changeConf(t, func(cf Conf) bool { return !cf.Joint() }, func(ctx context.Context, r *Replica) error {
		return r.LeaveJoint(ctx)
	})
	for _, id := range []int32{1, 2, 3} {
		waitConf(t, c.reps[id], Conf{Voters: []int32{1, 2, 3}})
	}
	// The removed replica goes; the group goes on without it.
	c.stop(0)
	c.ids = []int32{1, 2, 3}
	h.waitAcked(t, 20)
	// The leader stops: the others, broker 3 among them, elect one.
	old := c.leader()
	c.stop(old.self)
	for _, r := range c.reps {
		r.MemberFailed(old.self)
	}
	h.waitAcked(t, 10)
	c.start(old.self)
	acked := h.finish(t)

	lead = c.leader()
	for _, id := range c.ids {
		r := c.reps[id]
		retryUntil(t, func() error {
			if r.HighWatermark() < lead.HighWatermark() {
				return fmt.Errorf("replica %d at %d, leader at %d", id, r.HighWatermark(), lead.HighWatermark())
			}
			return nil
		})
		checkHistory(t, r, acked)
		if got := r.Replicas(); !slices.Equal(got, []int32{1, 2, 3}) {
			t.Errorf("replica %d: replicas %v", id, got)
		}
	}
	// The whole group restarts: the configuration is what the snapshot
	// and sidecar say.
	for _, id := range c.ids {
		c.stop(id)
	}
	for _, id := range c.ids {
		c.start(id)
	}
	for _, id := range c.ids {
		waitConf(t, c.reps[id], Conf{Voters: []int32{1, 2, 3}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.produce(ctx, "after-restart"); err != nil {
		t.Fatal(err)
	}
	vs := values(t, c.leader())
	if !strings.HasPrefix(vs[len(vs)-1], "after-restart") {
		t.Fatalf("last value %q", vs[len(vs)-1])
	}
	t.Logf("%d values acknowledged across the move, %d retries", len(acked), h.retries)
}
