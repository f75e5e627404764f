package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/spool-log/spool/internal/testlog"
	"github.com/spool-log/spool/node/replica/raftlog"
	"github.com/spool-log/spool/partition"
)

// memNet is an in-process transport between drivers: Send hands a copy of
// the message to the destination driver's Deliver, unless either end is
// cut off or down.
type memNet struct {
	mu      sync.Mutex
	drivers map[uint64]*Driver
	cut     map[uint64]bool
	sent    atomic.Int64 // messages delivered
	// votes counts the vote and pre-vote requests delivered, by
	// recipient.
	votes map[uint64]int
}

func (n *memNet) votesTo(id int32) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.votes[RaftID(id)]
}

type memTransport struct {
	net  *memNet
	self uint64
}

func (t memTransport) Send(g GroupKey, m *pb.Message) bool {
	t.net.mu.Lock()
	d := t.net.drivers[m.GetTo()]
	if t.net.cut[t.self] || t.net.cut[m.GetTo()] {
		d = nil
	}
	if d != nil && (m.GetType() == pb.MsgVote || m.GetType() == pb.MsgPreVote) {
		t.net.votes[m.GetTo()]++
	}
	t.net.mu.Unlock()
	if d == nil {
		return false
	}
	t.net.sent.Add(1)
	d.Deliver(t.self, g, proto.CloneOf(m))
	return true
}

func (memTransport) Flush() {}

// raftCluster is n brokers (ids 0..n-1), each with a driver, hosting one
// partition's replicas.
type raftCluster struct {
	t    testing.TB
	net  *memNet
	ids  []int32
	dirs map[int32]string
	reps map[int32]*Replica
	drv  map[int32]*Driver
	key  GroupKey
	pcfg partition.Config
	// joining: brokers that start as replicas the group adds (Config.Join).
	joining map[int32]bool
	// replicas, where set, is the replica list a broker opens with
	// instead of ids.
	replicas map[int32][]int32
	// holdCopies, while open, holds every snapshot copy back.
	holdCopies chan struct{}
	copies     atomic.Int64 // snapshot copies asked for
	// driverOpt, if set, adjusts a broker's driver config before it
	// starts.
	driverOpt func(id int32, cfg *DriverConfig)
	// points, where set, is what a broker opens with from its node's
	// shutdown checkpoint (shutdown_test.go).
	points map[int32]*ShutdownPoint
	// mu guards reps against a producer running beside the test.
	mu sync.Mutex
}

// quietLog is broker id's log: kept (raft's elections included) and printed
// only if the test fails, or to stderr with -v.
func quietLog(t testing.TB, id int32) *logrus.Entry {
	l := logrus.New()
	l.SetOutput(testlog.For(t))
	if testing.Verbose() {
		l.SetOutput(os.Stderr)
	}
	l.SetLevel(logrus.DebugLevel)
	return logrus.NewEntry(l).WithField("broker", id)
}

func newRaftCluster(t testing.TB, n int) *raftCluster {
	return newRaftClusterWith(t, n, partition.DefaultConfig())
}

func newRaftClusterWith(t testing.TB, n int, pcfg partition.Config) *raftCluster {
	return newRaftClusterOpt(t, n, pcfg, nil)
}

// newRaftClusterOpt is newRaftClusterWith, each broker's driver config
// adjusted by driverOpt.
func newRaftClusterOpt(t testing.TB, n int, pcfg partition.Config, driverOpt func(id int32, cfg *DriverConfig)) *raftCluster {
	return newRaftClusterLater(t, n, pcfg, driverOpt)
}

// newRaftClusterLater is newRaftClusterOpt with the brokers later not
// started: the test starts them (c.start) when it wants.
func newRaftClusterLater(t testing.TB, n int, pcfg partition.Config, driverOpt func(id int32, cfg *DriverConfig), later ...int32) *raftCluster {
	c := &raftCluster{t: t, net: &memNet{drivers: map[uint64]*Driver{}, cut: map[uint64]bool{}, votes: map[uint64]int{}},
		dirs: map[int32]string{}, reps: map[int32]*Replica{}, drv: map[int32]*Driver{}, pcfg: pcfg, driverOpt: driverOpt}
	c.key.Topic[0], c.key.Partition = 7, 3
	for id := int32(0); id < int32(n); id++ {
		c.ids = append(c.ids, id)
		c.dirs[id] = t.TempDir()
	}
	for _, id := range c.ids {
		if !slices.Contains(later, id) {
			c.start(id)
		}
	}
	t.Cleanup(func() {
		for _, id := range c.ids {
			c.stop(id)
		}
	})
	return c
}

func (c *raftCluster) start(id int32) {
	c.t.Helper()
	cfg := DefaultDriverConfig()
	cfg.Tick = 10 * time.Millisecond // fast elections for the test; nothing asserts on time
	cfg.Workers = 2
	cfg.Log = quietLog(c.t, id)
	cfg.FetchSnapshot = c.fetchSnapshot
	if c.driverOpt != nil {
		c.driverOpt(id, &cfg)
	}
	d := NewDriver(cfg)
	d.SetTransport(memTransport{c.net, RaftID(id)})
	pcfg := c.pcfg
	var commit *raftlog.CommitPoint
	if p := c.points[id]; p != nil {
		lp := p.Log
		lp.Written = time.Now()
		pcfg.ShutdownPoint, commit = &lp, p.Commit
	}
	log, err := partition.Open(c.dirs[id], pcfg)
	if err != nil {
		c.t.Fatal(err)
	}
	replicas := c.ids
	if rs, ok := c.replicas[id]; ok {
		replicas = rs
	}
	r, err := Open(log, Config{Self: id, Replicas: replicas, Driver: d, Group: c.key, Alive: c.alive, Join: c.joining[id],
		ShutdownCommit: commit})
	if err != nil {
		c.t.Fatal(err)
	}
	d.Start()
	c.net.mu.Lock()
	c.net.drivers[RaftID(id)] = d
	c.net.mu.Unlock()
	c.mu.Lock()
	c.reps[id], c.drv[id] = r, d
	c.mu.Unlock()
}

// fetchSnapshot reads broker from's snapshot of k in process, as the node
// reads it over the admin listener.
func (c *raftCluster) fetchSnapshot(ctx context.Context, k GroupKey, from int32) (io.ReadCloser, error) {
	c.copies.Add(1)
	if hold := c.holdCopies; hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	c.net.mu.Lock()
	d := c.net.drivers[RaftID(from)]
	c.net.mu.Unlock()
	if d == nil {
		return nil, fmt.Errorf("broker %d is down", from)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(d.WriteSnapshot(k, pw)) }()
	return pr, nil
}

func (c *raftCluster) alive(id int32) bool {
	c.net.mu.Lock()
	defer c.net.mu.Unlock()
	return c.net.drivers[RaftID(id)] != nil
}

// stop closes broker id's replica and driver (as a crash would, as far as
// the others can tell).
func (c *raftCluster) stop(id int32) {
	if c.reps[id] == nil {
		return
	}
	c.net.mu.Lock()
	delete(c.net.drivers, RaftID(id))
	c.net.mu.Unlock()
	c.drv[id].Stop()
	c.reps[id].Close()
	c.mu.Lock()
	delete(c.reps, id)
	c.mu.Unlock()
}

// leader waits until a live replica can take appends and returns it.
func (c *raftCluster) leader() *Replica {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		for _, r := range c.reps {
			if _, ok := r.WritableEpoch(); ok {
				c.mu.Unlock()
				return r
			}
		}
		c.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatal("no leader")
	return nil
}

// produce appends val with acks=all, retrying as a client does when
// leadership moves.
func (c *raftCluster) produce(ctx context.Context, val string) (partition.AppendInfo, error) {
	var err error
	for range 50 {
		var info partition.AppendInfo
		if info, err = c.leader().Produce(ctx, batch(1700000000000, val), AcksAll); err == nil {
			return info, nil
		}
		if !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrOutcomeUnknown) {
			return info, err
		}
	}
	return partition.AppendInfo{}, err
}

// readAll reads every committed batch of r from its log start.
func readAll(t *testing.T, r *Replica) [][]byte {
	t.Helper()
	var out [][]byte
	for off := r.LogStartOffset(); off < r.HighWatermark(); {
		s, err := r.Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for _, reg := range s.Regions {
			buf := make([]byte, reg.Length)
			if _, err := reg.File.ReadAt(buf, reg.Position); err != nil {
				t.Fatal(err)
			}
			for len(buf) >= partition.BatchHeaderSize {
				h, _ := partition.ParseBatchHeader(buf)
				if !h.Control() {
					out = append(out, buf[:h.Size()])
				}
				off = h.LastOffset() + 1
				buf = buf[h.Size():]
			}
		}
		s.Release()
	}
	return out
}

func TestRaftReplicasCommitAndFailOver(t *testing.T) {
	c := newRaftCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type acked struct {
		off int64
		val string
	}
	var acks []acked
	// produce retries as a client does: a leader change fails a
	// proposal (not leader, or outcome unknown), the next leader takes it.
	produce := func(_ *Replica, val string) error {
		var err error
		for range 50 {
			var info partition.AppendInfo
			info, err = c.leader().Produce(ctx, batch(1700000000000, val), AcksAll)
			if err == nil {
				acks = append(acks, acked{info.BaseOffset, val})
				return nil
			}
			if !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrOutcomeUnknown) {
				return err
			}
		}
		return err
	}
	// Whoever wins the first election, leadership goes to the preferred
	// replica once it is caught up.
	retryUntil(t, func() error {
		if !c.reps[0].IsLeader() {
			return fmt.Errorf("preferred replica 0 not leading (leader %d)", c.reps[0].Leader())
		}
		return nil
	})
	lead := c.leader()
	for i := range 20 {
		if err := produce(lead, fmt.Sprintf("a%02d", i)); err != nil {
			t.Fatalf("produce a%02d: %v", i, err)
		}
	}
	if hw := lead.HighWatermark(); hw <= acks[len(acks)-1].off {
		t.Fatalf("high watermark %d does not cover the last acked offset %d", hw, acks[len(acks)-1].off)
	}
	// Followers reach the same commit point and epoch.
	for _, id := range c.ids {
		r := c.reps[id]
		retryUntil(t, func() error {
			if r.HighWatermark() != lead.HighWatermark() {
				return fmt.Errorf("replica %d high watermark %d, leader %d", id, r.HighWatermark(), lead.HighWatermark())
			}
			if r.Leader() != lead.self || r.LeaderEpoch() != lead.LeaderEpoch() {
				return fmt.Errorf("replica %d sees leader %d epoch %d, want %d %d", id, r.Leader(), r.LeaderEpoch(), lead.self, lead.LeaderEpoch())
			}
			return nil
		})
	}
	retryUntil(t, func() error {
		if isr := lead.ISR(); len(isr) != 3 {
			return fmt.Errorf("ISR %v, want all three", isr)
		}
		return nil
	})
	old := lead.self
	oldEpoch := lead.LeaderEpoch()
	c.stop(old)
	for _, id := range c.ids {
		if r := c.reps[id]; r != nil {
			r.MemberFailed(old)
		}
	}
	lead = c.leader()
	if lead.self == old || lead.LeaderEpoch() <= oldEpoch {
		t.Fatalf("new leader %d epoch %d after %d epoch %d", lead.self, lead.LeaderEpoch(), old, oldEpoch)
	}
	for i := range 10 {
		if err := produce(lead, fmt.Sprintf("b%02d", i)); err != nil {
			t.Fatalf("produce b%02d after failover: %v", i, err)
		}
	}
	// The old leader returns, catches up from its disk, and the preferred
	// replica gets leadership back.
	c.start(old)
	retryUntil(t, func() error {
		if l := c.reps[old]; !l.IsLeader() {
			return fmt.Errorf("preferred replica %d not leading (leader %d)", old, l.Leader())
		}
		return nil
	})
	lead = c.leader()
	if err := produce(lead, "c00"); err != nil {
		t.Fatalf("produce after hand-back: %v", err)
	}
	// Every acknowledged batch is read back at its offset on every replica.
	for _, id := range c.ids {
		r := c.reps[id]
		retryUntil(t, func() error {
			if r.HighWatermark() < lead.HighWatermark() {
				return fmt.Errorf("replica %d behind", id)
			}
			return nil
		})
		at := map[int64][]byte{}
		for _, b := range readAll(t, r) {
			h, _ := partition.ParseBatchHeader(b)
			at[h.BaseOffset] = b
		}
		for _, a := range acks {
			if !bytes.Contains(at[a.off], []byte(a.val)) {
				t.Errorf("replica %d: acked %s at offset %d, read %q there", id, a.val, a.off, at[a.off])
			}
		}
	}
}

func TestRaftFollowerRefusesAndCutLeaderCannotCommit(t *testing.T) {
	c := newRaftCluster(t, 3)
	// Settled on the preferred replica, so no hand-back moves it meanwhile.
	retryUntil(t, func() error {
		if !c.reps[0].IsLeader() {
			return errors.New("preferred replica 0 not leading")
		}
		return nil
	})
	lead := c.leader()
	for _, r := range c.reps {
		if r != lead {
			if _, err := r.Append(batch(1, "x")); !errors.Is(err, ErrNotLeader) {
				t.Errorf("append on follower %d: %v, want ErrNotLeader", r.self, err)
			}
		}
	}
	// A follower cut off (gossip still sees it alive) leaves the ISR and
	// is offline as far as the leader can tell once a write wakes the
	// group (asleep, nothing is sent: the ISR holds everything), and
	// returns to both.
	var f *Replica
	for _, r := range c.reps {
		if r != lead {
			f = r
			break
		}
	}
	setCut := func(r *Replica, cut bool) {
		c.net.mu.Lock()
		c.net.cut[RaftID(r.self)] = cut
		c.net.mu.Unlock()
	}
	setCut(f, true)
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	if _, err := lead.Produce(wctx, batch(1, "while cut"), AcksAll); err != nil {
		t.Fatal(err)
	}
	retryUntil(t, func() error {
		if isr, off := lead.ISR(), lead.Offline(); slices.Contains(isr, f.self) || !slices.Contains(off, f.self) {
			return fmt.Errorf("follower %d cut off: ISR %v offline %v", f.self, isr, off)
		}
		return nil
	})
	setCut(f, false)
	retryUntil(t, func() error {
		if isr, off := lead.ISR(), lead.Offline(); len(isr) != 3 || len(off) != 0 {
			return fmt.Errorf("follower %d back: ISR %v offline %v", f.self, isr, off)
		}
		return nil
	})

	// Cut the leader off: an acks=all produce cannot commit on it.
	c.net.mu.Lock()
	c.net.cut[RaftID(lead.self)] = true
	c.net.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	info, err := lead.Produce(ctx, batch(1, "lost"), AcksAll)
	if err == nil {
		t.Fatalf("a leader cut off from its group committed offset %d", info.BaseOffset)
	}
	hw := lead.HighWatermark()
	// The rest elect a new leader; the old one's uncommitted entry is
	// overwritten once it hears from it.
	var next *Replica
	retryUntil(t, func() error {
		for _, r := range c.reps {
			if _, ok := r.WritableEpoch(); ok && r != lead {
				next = r
				return nil
			}
		}
		return errors.New("no new leader")
	})
	if _, err := next.Produce(context.Background(), batch(1, "kept"), AcksAll); err != nil {
		t.Fatal(err)
	}
	c.net.mu.Lock()
	c.net.cut[RaftID(lead.self)] = false
	c.net.mu.Unlock()
	retryUntil(t, func() error {
		if lead.HighWatermark() <= hw || lead.IsLeader() {
			return fmt.Errorf("old leader: high watermark %d, leading %v", lead.HighWatermark(), lead.IsLeader())
		}
		return nil
	})
	for _, r := range c.reps {
		for _, b := range readAll(t, r) {
			if bytes.Contains(b, []byte("lost")) {
				t.Errorf("replica %d serves the batch a cut-off leader never committed", r.self)
			}
		}
	}
}

func retryUntil(t testing.TB, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal(err)
}

// TestRaftRetentionCompactsAndSnapshotsAFollower: retention on replicated
// logs moves each log start below the commit point only (raftlog.Compact);
// a follower that was down while the leader's log start passed its end
// catches up by snapshot ("log start moved") and then holds the same
// batches at the same offsets.
func TestRaftRetentionCompactsAndSnapshotsAFollower(t *testing.T) {
	pcfg := partition.DefaultConfig()
	pcfg.SegmentBytes = 4096
	pcfg.RetentionBytes = 8192
	c := newRaftClusterWith(t, 3, pcfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 100 {
		if _, err := c.produce(ctx, fmt.Sprintf("first-%03d-%s", i, strings.Repeat("x", 100))); err != nil {
			t.Fatal(err)
		}
	}
	lead := c.leader()
	var down int32 = -1
	for _, id := range c.ids {
		if id != lead.self {
			down = id
			break
		}
	}
	downEnd := c.reps[down].LogEndOffset()
	c.stop(down)
	for i := range 200 {
		if _, err := c.produce(ctx, fmt.Sprintf("second-%03d-%s", i, strings.Repeat("y", 100))); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range c.reps {
		if _, err := r.EnforceRetention(); err != nil {
			t.Fatalf("retention on %d: %v", r.self, err)
		}
		if start, hw := r.LogStartOffset(), r.HighWatermark(); start == 0 || start > hw {
			t.Errorf("replica %d: log start %d after retention, high watermark %d", r.self, start, hw)
		}
		if size := r.Size(); size > 3*8192 {
			t.Errorf("replica %d holds %d bytes after retention of 8192", r.self, size)
		}
	}
	lead = c.leader()
	if lead.LogStartOffset() <= downEnd {
		t.Fatalf("leader's log start %d not past the stopped follower's end %d", lead.LogStartOffset(), downEnd)
	}
	c.start(down)
	f := c.reps[down]
	if _, err := c.produce(ctx, "after"); err != nil {
		t.Fatal(err)
	}
	lead = c.leader()
	retryUntil(t, func() error {
		if f.HighWatermark() != lead.HighWatermark() {
			return fmt.Errorf("follower %d high watermark %d, leader %d", down, f.HighWatermark(), lead.HighWatermark())
		}
		return nil
	})
	if f.LogStartOffset() <= downEnd {
		t.Errorf("follower restarted at %d, not past its old end %d: no snapshot?", f.LogStartOffset(), downEnd)
	}
	fb := readAll(t, f)
	lb := readAll(t, lead)
	// The follower's log starts where the leader's was at the snapshot;
	// from there on both hold the same bytes.
	for len(lb) > len(fb) {
		lb = lb[1:]
	}
	for i := range fb {
		if !bytes.Equal(fb[i], lb[i]) {
			t.Fatalf("batch %d differs between follower %d and leader %d", i, down, lead.self)
		}
	}
	if len(fb) == 0 || !bytes.Contains(fb[len(fb)-1], []byte("after")) {
		t.Errorf("follower's last batch is not the one produced after its return")
	}
}

// A batch queued while its replica looked writable but proposed in a round
// after it stopped leading fails with ErrNotLeader and becomes no entry:
// raft must not forward it to the new leader, whose entry of that term
// the replica would then take for its own (and answer with its offsets).
// Here a follower is made to look writable (as a leader that the round's
// messages are about to depose does) while a batch is queued.
func TestQueuedProposalOfADeposedLeaderFails(t *testing.T) {
	c := newRaftCluster(t, 3)
	ctx := t.Context()
	if _, err := c.produce(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	lead := c.leader()
	var follower *Replica
	c.mu.Lock()
	for _, r := range c.reps {
		if r != lead {
			follower = r
			break
		}
	}
	c.mu.Unlock()
	var pending *Pending
	for deadline := time.Now().Add(10 * time.Second); pending == nil; {
		if time.Now().After(deadline) {
			t.Fatal("the follower's batch was never queued")
		}
		follower.rg.writable.Store(true) // stale: the next round publishes false
		p, err := follower.Enqueue(batch(1700000000000, "stale"))
		if err == nil {
			pending = p
		} else if !errors.Is(err, ErrNotLeader) {
			t.Fatal(err)
		}
	}
	if _, _, err := pending.Appended(); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a batch proposed by a replica that does not lead: %v, want ErrNotLeader", err)
	}
	if _, err := c.produce(ctx, "after"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Replica{lead, follower} {
		retryUntil(t, func() error {
			bs := readAll(t, r)
			stale := slices.ContainsFunc(bs, func(b []byte) bool { return bytes.HasSuffix(b, []byte("stale")) })
			if len(bs) != 2 || stale {
				return fmt.Errorf("replica %d holds %d batches (the stale one among them: %v), want the two the leader took", r.self, len(bs), stale)
			}
			return nil
		})
	}
}
