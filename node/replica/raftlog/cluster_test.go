package raftlog

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"math"
	"slices"
	"testing"

	"github.com/spool-log/spool/partition"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// A cluster of RawNodes over Storages on real partition logs, with an
// in-memory router, driven step by step from the test's goroutine: each
// Ready is persisted (snapshot, entries, hard state) before its messages are
// sent, as raft's contract requires. A crash closes a node's partition log
// without Storage.Close, so what was not yet written (a lazy commit) is lost
// as in a kill -9 of the process after its writes.

type testNode struct {
	log *partition.Log
	st  *Storage
	rn  *raft.RawNode
}

type cluster struct {
	t        *testing.T
	ids      []uint64
	dirs     map[uint64]string
	nodes    map[uint64]*testNode // missing: down
	cut      map[uint64]bool      // isolated: its messages, both ways, are dropped
	inflight []*pb.Message
	// proposed is each proposal's batch as its leader stamped it, by value.
	proposed map[string][]byte
	seq      int
}

var quietRaft = &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)}

func newCluster(t *testing.T, n int) *cluster {
	c := &cluster{t: t, dirs: map[uint64]string{}, nodes: map[uint64]*testNode{}, cut: map[uint64]bool{}, proposed: map[string][]byte{}}
	for id := uint64(1); id <= uint64(n); id++ {
		c.ids = append(c.ids, id)
		c.dirs[id] = t.TempDir()
	}
	for _, id := range c.ids {
		c.start(id)
	}
	t.Cleanup(func() {
		for _, id := range c.ids {
			if nd := c.nodes[id]; nd != nil {
				nd.st.Close()
				nd.log.Close()
			}
		}
	})
	return c
}

// start opens (or reopens, from its disk) node id.
func (c *cluster) start(id uint64) {
	c.t.Helper()
	l := openLog(c.t, c.dirs[id])
	st := openStorage(c.t, l, Options{Bootstrap: &pb.ConfState{Voters: c.ids}})
	rn, err := raft.NewRawNode(&raft.Config{
		ID: id, ElectionTick: 10, HeartbeatTick: 1, Storage: st,
		MaxSizePerMsg: 64 << 10, MaxInflightMsgs: 64, MaxUncommittedEntriesSize: 1 << 24,
		PreVote: true, CheckQuorum: true, Logger: quietRaft,
	})
	if err != nil {
		c.t.Fatal(err)
	}
	c.nodes[id] = &testNode{log: l, st: st, rn: rn}
}

// crash stops node id as a kill would: its log's files are closed, the
// Storage is dropped without saving anything more.
func (c *cluster) crash(id uint64) {
	c.nodes[id].log.Close()
	delete(c.nodes, id)
}

func (c *cluster) send(m *pb.Message) {
	if c.cut[m.GetFrom()] || c.cut[m.GetTo()] {
		return
	}
	c.inflight = append(c.inflight, m)
}

// drain handles Readys and delivers messages until nothing moves.
func (c *cluster) drain() {
	c.t.Helper()
	for moved := true; moved; {
		moved = false
		for _, id := range c.ids {
			nd := c.nodes[id]
			if nd == nil || !nd.rn.HasReady() {
				continue
			}
			moved = true
			rd := nd.rn.Ready()
			if !raft.IsEmptySnap(rd.Snapshot) {
				if err := nd.st.ApplySnapshot(rd.Snapshot); err != nil {
					c.t.Fatalf("node %d: %v", id, err)
				}
			}
			if err := nd.st.Append(rd.Entries); err != nil {
				c.t.Fatalf("node %d: %v", id, err)
			}
			if rd.HardState != nil && !raft.IsEmptyHardState(rd.HardState) {
				if err := nd.st.SetHardState(rd.HardState); err != nil {
					c.t.Fatalf("node %d: %v", id, err)
				}
			}
			for _, m := range rd.Messages {
				c.send(m)
			}
			for _, e := range rd.CommittedEntries {
				if e.GetType() == pb.EntryConfChange || e.GetType() == pb.EntryConfChangeV2 {
					c.t.Fatalf("node %d: unexpected conf change at %d", id, e.GetIndex())
				}
			}
			nd.rn.Advance(rd)
		}
		msgs := c.inflight
		c.inflight = nil
		for _, m := range msgs {
			moved = true
			if nd := c.nodes[m.GetTo()]; nd != nil && !c.cut[m.GetTo()] {
				nd.rn.Step(m) // errors are raft's own refusals (e.g. a stale message)
			}
		}
	}
}

// until ticks every live node and drains, until cond holds, for at most
// ticks ticks.
func (c *cluster) until(what string, ticks int, cond func() bool) {
	c.t.Helper()
	for range ticks {
		c.drain()
		if cond() {
			return
		}
		for _, id := range c.ids {
			if nd := c.nodes[id]; nd != nil {
				nd.rn.Tick()
			}
		}
	}
	c.t.Fatalf("%s: not after %d ticks", what, ticks)
}

// leader is the live node every live, connected node follows, or 0.
func (c *cluster) leader() uint64 {
	var lead uint64
	for _, id := range c.ids {
		nd := c.nodes[id]
		if nd == nil || c.cut[id] {
			continue
		}
		st := nd.rn.BasicStatus()
		if st.Lead == 0 || (lead != 0 && st.Lead != lead) {
			return 0
		}
		lead = st.Lead
	}
	if nd := c.nodes[lead]; nd == nil || nd.rn.BasicStatus().RaftState != raft.StateLeader {
		return 0
	}
	return lead
}

// propose has the leader stamp a batch of n records with the offset and
// epoch it will get, and propose it.
func (c *cluster) propose(lead uint64, n int) {
	c.t.Helper()
	nd := c.nodes[lead]
	last, _ := nd.st.LastIndex()
	next, err := nd.st.NextOffset(last)
	if err != nil {
		c.t.Fatal(err)
	}
	var vals []string
	for range n {
		c.seq++
		vals = append(vals, fmt.Sprintf("v%04d", c.seq))
	}
	b := stamped(recordBatch(vals...), next, nd.rn.BasicStatus().GetTerm())
	c.proposed[vals[0]] = bytes.Clone(b)
	if err := nd.rn.Propose(b); err != nil {
		c.t.Fatalf("propose to %d: %v", lead, err)
	}
	c.drain()
}

func (c *cluster) commit(id uint64) uint64 { return c.nodes[id].rn.BasicStatus().GetCommit() }

func (c *cluster) last(id uint64) uint64 {
	i, _ := c.nodes[id].st.LastIndex()
	return i
}

// allCommitted: every live, connected node committed its leader's last index.
func (c *cluster) allCommitted(lead uint64) func() bool {
	return func() bool {
		for _, id := range c.ids {
			if c.nodes[id] != nil && !c.cut[id] && (c.commit(id) < c.last(lead) || c.last(id) != c.last(lead)) {
				return false
			}
		}
		return true
	}
}

// committedValues is the first record value of every record batch entry up
// to the commit point of node id, in log order.
func (c *cluster) committedValues(id uint64) []string {
	c.t.Helper()
	nd := c.nodes[id]
	first, _ := nd.st.FirstIndex()
	ents, err := nd.st.Entries(first, c.commit(id)+1, math.MaxUint64)
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.GetType() != pb.EntryNormal || len(e.Data) == 0 {
			continue
		}
		v := recordValues(c.t, e.Data)[0]
		if want := c.proposed[v]; !bytes.Equal(e.Data, want) {
			c.t.Fatalf("node %d entry %d: stored batch differs from the one its leader stamped and proposed", id, e.GetIndex())
		}
		out = append(out, v)
	}
	return out
}

// committedSide is the committed sidecar entries of a node: index, term and
// the offset each sits before.
func committedSide(nd *testNode) [][3]int64 {
	commit := nd.rn.BasicStatus().GetCommit()
	nd.st.mu.Lock()
	defer nd.st.mu.Unlock()
	var out [][3]int64
	for _, e := range nd.st.side.ents {
		if e.index <= commit {
			out = append(out, [3]int64{int64(e.index), int64(e.term), e.offset})
		}
	}
	return out
}

func TestClusterFailoverTruncatesDivergedFollower(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) { failover(t, n, false) })
	}
	// The survivors move their log start past everything the dead held, so
	// the rejoining replicas get a snapshot: their logs restart at the
	// leader's log start.
	t.Run("3 nodes, log start moved", func(t *testing.T) { failover(t, 3, true) })
}

func failover(t *testing.T, n int, compact bool) {
	c := newCluster(t, n)
	c.until("first leader", 300, func() bool { return c.leader() != 0 })
	old := c.leader()
	for range 20 {
		c.propose(old, 1+c.seq%3)
	}
	c.until("first batches committed", 100, c.allCommitted(old))
	committed := c.committedValues(old)
	if len(committed) != 20 {
		t.Fatalf("%d batches committed, want 20", len(committed))
	}

	// The leader is cut off and takes proposals it can never commit: they
	// reach its log only.
	c.cut[old] = true
	commitBefore := c.commit(old)
	for range 5 {
		c.propose(old, 2)
	}
	if c.last(old) != commitBefore+5 || c.commit(old) != commitBefore {
		t.Fatalf("cut-off leader: last %d commit %d, want %d and %d", c.last(old), c.commit(old), commitBefore+5, commitBefore)
	}
	diverged := c.seq
	c.crash(old)
	// With five, a follower dies too: three of five still decide.
	var follower uint64
	if n == 5 {
		follower = c.ids[slices.IndexFunc(c.ids, func(id uint64) bool { return id != old })]
		c.crash(follower)
	}

	c.until("new leader", 500, func() bool { l := c.leader(); return l != 0 && l != old })
	lead := c.leader()
	for range 10 {
		c.propose(lead, 1)
	}
	c.until("batches of the new leader committed", 100, c.allCommitted(lead))
	want := append(committed, c.committedValues(lead)[20:]...)
	if compact {
		for _, id := range c.ids {
			if nd := c.nodes[id]; nd != nil {
				if err := nd.st.Compact(c.commit(id), &pb.ConfState{Voters: c.ids}); err != nil {
					t.Fatal(err)
				}
			}
		}
		for range 5 {
			c.propose(lead, 1)
		}
		c.until("batches after the compaction committed", 100, c.allCommitted(lead))
		want = append(want, c.committedValues(lead)...)
	}

	// The old leader comes back from its disk, with its uncommitted suffix,
	// and rejoins; so does the dead follower.
	c.start(old)
	delete(c.cut, old)
	if c.last(old) != commitBefore+5 {
		t.Fatalf("restarted old leader has last index %d, want its %d", c.last(old), commitBefore+5)
	}
	if follower != 0 {
		c.start(follower)
	}
	c.until("old leader caught up", 300, c.allCommitted(lead))
	c.drain()

	if len(want) != 30 && !compact || len(want) != 35 && compact {
		t.Fatalf("%d batches committed in all", len(want))
	}
	leaderFirst, _ := c.nodes[lead].st.FirstIndex()
	hw, err := c.nodes[lead].st.NextOffset(c.commit(lead))
	if err != nil {
		t.Fatal(err)
	}
	ref := logBytes(t, c.nodes[lead].log, hw)
	for _, id := range c.ids {
		nd := c.nodes[id]
		if first, _ := nd.st.FirstIndex(); first != leaderFirst {
			t.Fatalf("node %d log starts at entry %d, the leader's at %d", id, first, leaderFirst)
		}
		if compact && nd.log.StartOffset() != c.nodes[lead].log.StartOffset() {
			t.Fatalf("node %d log starts at offset %d, the leader's at %d", id, nd.log.StartOffset(), c.nodes[lead].log.StartOffset())
		}
		if got := c.committedValues(id); !slices.Equal(got, want[len(want)-len(got):]) || len(got) < 5 {
			t.Fatalf("node %d committed %v, want %v", id, got, want)
		}
		if h, _ := nd.st.NextOffset(c.commit(id)); h != hw {
			t.Fatalf("node %d high watermark %d, leader's %d", id, h, hw)
		}
		if !bytes.Equal(logBytes(t, nd.log, hw), ref) {
			t.Fatalf("node %d holds different bytes than the leader below offset %d", id, hw)
		}
		// Raft's own entries (an empty entry per election here) took no
		// offset, the same ones at the same places everywhere.
		if got, want := committedSide(nd), committedSide(c.nodes[lead]); !slices.Equal(got, want) || len(got) < 2 && !compact {
			t.Fatalf("node %d committed side entries %v, the leader's %v", id, got, want)
		}
		// Nothing of the diverged suffix is left in any log.
		all := logBytes(t, nd.log, nd.log.EndOffset())
		for k := diverged - 9; k <= diverged; k++ {
			if bytes.Contains(all, fmt.Appendf(nil, "v%04d", k)) {
				t.Fatalf("node %d still holds v%04d, proposed to the cut-off leader", id, k)
			}
		}
	}
	// The old leader's cut reached the partition's epoch cache too. (After
	// a snapshot its cache starts at its log start, the leader's at its
	// first segment's base.)
	if got, want := c.nodes[old].log.LeaderEpochs(), c.nodes[lead].log.LeaderEpochs(); !compact && !slices.Equal(got, want) {
		t.Fatalf("old leader's epochs %v, leader's %v", got, want)
	}
}
