package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/spool-log/spool/internal/stages"
	"github.com/spool-log/spool/node/replica/raftlog"
	"github.com/spool-log/spool/partition"
)

// ErrOutcomeUnknown fails a proposal the leader accepted but cannot see
// through: leadership moved, or its entry was overwritten, before it was
// committed. It may or may not be committed (REQUEST_TIMED_OUT: a client
// retries, and an idempotent producer's retry is recognised).
// ErrTooLarge refuses a batch above DriverConfig.MaxEntryBytes
// (MESSAGE_TOO_LARGE): the replicas could not pass it on.
var ErrTooLarge = errors.New("batch above the largest replicated entry")

var ErrOutcomeUnknown = errors.New("leadership changed before the batch was committed: outcome unknown")

// RaftID is the Raft member id of a broker: raft reserves 0 for "none",
// and broker id 0 is valid.
func RaftID(broker int32) uint64 { return uint64(broker) + 1 }

func brokerOf(id uint64) int32 {
	if id == 0 {
		return -1
	}
	return int32(id - 1)
}

type snapReport struct {
	node uint64
	ok   bool
}

// raftGroup is a replica's member of its partition's Raft group.
type raftGroup struct {
	r    *Replica
	d    *Driver
	w    *worker
	key  GroupKey
	self uint64
	st   *raftlog.Storage
	log  *logrus.Entry

	// inMu guards what arrives from other goroutines between rounds.
	inMu        sync.Mutex
	inbox       []*pb.Message
	inboxAt     time.Time // when stages.On: the first message of inbox arrived
	unreachable []uint64
	snapStatus  []snapReport
	campaign    bool
	forget      bool
	transferTo  uint64
	wakeUp      bool // gossip's word on a replica: tick again (quiesce.go)
	// proposals are batches enqueued for the next round to propose, in
	// order; stopped is set once the group closed or broke, after which
	// none is taken (a proposer never waits for mu, which a round holds
	// through its disk write).
	proposals []*proposal
	stopped   error
	// heard is the leader's commit index as its messages tell it
	// (leader_commit.go).
	heard    leaderCommit
	lastSeen map[uint64]int64 // raft id -> tick count when last heard from
	ticks    atomic.Int64

	// mu guards rn and the proposals; the worker holds it for a round.
	mu            sync.Mutex
	rn            *raft.RawNode
	closed        bool
	broken        error
	pending       []*proposal              // proposed, not yet in a Ready's entries
	appended      []*proposal              // in the log, not yet committed, by index
	termStart     uint64                   // index of this leader's empty entry of termStartTerm
	reads         map[string]chan struct{} // ConfirmLeader's ReadIndex contexts (confirm.go)
	readSeq       uint64
	termStartTerm uint64
	applied       uint64
	// rebuilding: replicas that announced they throw their log away to
	// be rebuilt from this leader, and whether it has sent them a
	// snapshot since (repair.go).
	rebuilding map[uint64]bool
	// fencedPeers: replicas that asked CaughtUpWithout lately, damaged
	// and waiting to be rebuilt, by when they last asked (repair.go).
	fencedPeers map[uint64]time.Time
	// eager is how many more ticks the preferred replica of a new group
	// campaigns on each tick while nobody leads: the others open the group
	// when the catalog reaches them, and its first campaign finds none.
	eager int

	// asleep: the group is quiesced and not ticked (quiesce.go). Set by
	// its worker's rounds; cleared there, or under mu by a proposal or a
	// ConfirmLeader.
	asleep atomic.Bool
	// quiescing: this round's Ready carries the heartbeat the quiesce
	// markers follow.
	quiescing bool
	// copying cancels the copy of a snapshot's records in flight, and
	// copyAfter holds the next one back after a failure (snapcopy.go).
	copying   context.CancelFunc
	copyAfter time.Time

	// Published after every round, read without mu.
	lead     atomic.Uint64
	term     atomic.Uint64
	leading  atomic.Bool
	writable atomic.Bool // leading, and an entry of its term is committed
	isr      atomic.Pointer[[]int32]
	// silent are the replicas a leader has not heard from within
	// ISRMaxIdleTicks (offline as far as the group can tell).
	silent atomic.Pointer[[]int32]

	// Configuration (confchange.go), under mu: conf as applied, the
	// configurations applied since the snapshot (confAt), the index of
	// the last change this leader appended, and the proposals waiting
	// for theirs to apply.
	conf      *pb.ConfState
	confs     []confPoint
	confIndex uint64
	confWaits map[string]*confWait
	confSeq   uint64
	// members are the voters in the catalog's order; learners the
	// learners (both published for readers without mu).
	members  atomic.Pointer[[]int32]
	learners atomic.Pointer[[]int32]

	// held are the learners the limiter held an append of back, each
	// with its latest answer deferred (learner_throttle.go); under mu.
	held map[uint64]*pb.Message
}

func (r *Replica) openRaft(cfg Config) error {
	pref := *r.pref.Load()
	start := cfg.Voters
	if start == nil {
		start = pref
	}
	voters := make([]uint64, 0, len(start))
	for _, id := range start {
		voters = append(voters, RaftID(id))
	}
	if cfg.Join {
		voters = nil
	}
	// The log's own retention would move its start without the Raft log;
	// the replica applies the topic's through raftlog.Compact instead.
	r.rgSync = cfg.Driver.cfg.Sync
	lc := r.log.Config()
	if r.remote == nil { // else New took them already
		r.retentionAge, r.retentionBytes = lc.RetentionAge, lc.RetentionBytes
	}
	r.log.SetConfig(r.raftLogConfig(lc))
	// Sync through the log's every-append flush policy: one fsync of the
	// segment per run of entries a Ready appends (raftlog's Sync would
	// Flush, which also rewrites the recovery point: three more fsyncs).
	st, err := raftlog.Open(r.log, raftlog.Options{Bootstrap: &pb.ConfState{Voters: voters}, ShutdownCommit: cfg.ShutdownCommit})
	if err != nil {
		return err
	}
	hs, _, _ := st.InitialState()
	d := cfg.Driver
	g := &raftGroup{r: r, d: d, w: d.workerOf(cfg.Group), key: cfg.Group, self: RaftID(r.self), st: st,
		log: d.log.WithFields(logrus.Fields{"partition": cfg.Group.String()}), lastSeen: map[uint64]int64{}}
	first, _ := st.FirstIndex()
	g.applied = max(hs.GetCommit(), first-1)
	rn, err := raft.NewRawNode(&raft.Config{
		ID: g.self, ElectionTick: d.cfg.ElectionTick, HeartbeatTick: d.cfg.HeartbeatTick, Storage: st,
		Applied: g.applied, MaxSizePerMsg: d.cfg.MaxSizePerMsg, MaxInflightMsgs: d.cfg.MaxInflightMsgs, MaxInflightBytes: d.cfg.MaxInflightBytes,
		MaxUncommittedEntriesSize: d.cfg.MaxUncommittedEntriesSize, MaxCommittedSizePerReady: 4 << 20,
		PreVote: true, CheckQuorum: true, StepDownOnRemoval: true, Logger: raftLogger{g.log},
		// A proposal is matched to its entry by the replica that made it
		// (match), so it must never become another leader's entry.
		DisableProposalForwarding: true,
	})
	if err != nil {
		st.Close()
		return fmt.Errorf("raft group %s: %w", cfg.Group, err)
	}
	g.rn = rn
	if err := g.restoreConf(); err != nil {
		st.Close()
		return fmt.Errorf("raft group %s: %w", cfg.Group, err)
	}
	hw, err := st.NextOffset(g.applied)
	if err != nil {
		st.Close()
		return fmt.Errorf("raft group %s: high watermark at %d: %w", cfg.Group, g.applied, err)
	}
	r.hw.Store(hw)
	empty := []int32{}
	g.isr.Store(&empty)
	r.rg = g
	// A single voter elects itself at once; so does the preferred replica
	// of a brand-new group, instead of waiting out an election timeout.
	if !cfg.Join && (len(voters) == 1 || (hs.GetTerm() == 0 && pref[0] == r.self && slices.Contains(start, r.self))) {
		g.campaign = true
		g.eager = 3 * d.cfg.ElectionTick
	}
	d.add(g)
	return nil
}

// seen notes that the group heard from peer at the current tick.
func (g *raftGroup) seen(peer uint64) {
	g.inMu.Lock()
	g.lastSeen[peer] = g.ticks.Load()
	g.inMu.Unlock()
}

// process is one round of the group on its worker: what arrived is
// stepped, a tick if due, then every Ready handled per raft's contract.
func (g *raftGroup) process(tick bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.broken != nil {
		return
	}
	g.inMu.Lock()
	msgs, unr, snaps, camp, forget, transfer, wakeUp := g.inbox, g.unreachable, g.snapStatus, g.campaign, g.forget, g.transferTo, g.wakeUp
	g.inbox, g.unreachable, g.snapStatus, g.campaign, g.forget, g.transferTo, g.wakeUp = nil, nil, nil, false, false, 0, false
	props := g.proposals
	g.proposals = nil
	inboxAt := g.inboxAt
	g.inboxAt = time.Time{}
	g.inMu.Unlock()
	if stages.On && len(msgs) > 0 {
		if g.leading.Load() {
			stages.Since("L3 leader: message delivered to its round", inboxAt)
		} else {
			stages.Since("F1 follower: message delivered to its round", inboxAt)
		}
	}
	if wakeUp || camp || forget || transfer != 0 || len(unr) > 0 || len(snaps) > 0 || wakes(msgs) {
		g.asleep.Store(false)
	}
	if g.asleep.Load() {
		tick = false // a sleeping group only steps answers to its heartbeats
	}
	if transfer != 0 {
		g.rn.TransferLeader(transfer)
	}
	g.releaseLearners()
	var quiesceHB *pb.Message
	for _, m := range msgs {
		if IsQuiesceHeartbeat(m) {
			quiesceHB = m // the driver's, not raft's: never stepped
			continue
		}
		if m.GetType() == pb.MsgTimeoutNow && g.r.fenced.Load() {
			// A damaged replica waiting to be rebuilt (Fence) takes no
			// leadership handed to it: the leader's preferred-replica
			// handback would otherwise bring it straight back.
			continue
		}
		if m.GetType() == pb.MsgSnap && g.awaitsCopy(m) {
			continue // stepped once its records are copied (snapcopy.go)
		}
		if (m.GetType() == pb.MsgVote || m.GetType() == pb.MsgPreVote) && !g.hasVoters() {
			// A joining replica knows no voters, so it cannot tell a
			// candidate of the group from one that believes in another
			// configuration (etcd raft lets a non-member vote): it
			// elects nobody. Dropped, not refused: no answer is needed.
			continue
		}
		if m.GetType() == pb.MsgApp && m.GetIndex() == 0 && !g.hasVoters() {
			// An append from the group's first entry matches a joining
			// replica's empty log (its snapshot is at index 0, term 0),
			// so raft would take it; but the starting voters are in no
			// entry, only in the bootstrap snapshot, and a replica holding
			// entries with no configuration panics on the next change it
			// applies. A leader elected on an empty log that never heard
			// from this replica sends just that (a replica of a new
			// group's list that opened after the group had a leader:
			// its node cannot tell it never held state). Refused as raft
			// refuses an append it cannot place (a previous term no log
			// has at 0), and marked so (send): the leader seals and sends
			// the snapshot (sealForJoiner).
			m.LogTerm = proto.Uint64(m.GetLogTerm() + 1)
		}
		if m.GetType() == pb.MsgHeartbeat && m.GetCommit() > 0 {
			// The leader's heartbeat commits up to what it last knew this
			// replica to hold; a replica that lost its log (a replaced
			// disk, reopened joining) holds less, and raft would panic.
			// It commits nothing on it; its answer has the leader probe,
			// and the refused append brings the snapshot.
			if last, err := g.st.LastIndex(); err == nil && m.GetCommit() > last {
				m.Commit = nil
			}
		}
		if m.GetType() == pb.MsgAppResp && m.GetReject() {
			g.sealForJoiner(m.GetFrom(), m.GetRejectHint(), bytes.Equal(m.GetContext(), joiningMark))
		}
		if g.deferForLearner(m) {
			continue // stepped once the limiter has room (learner_throttle.go)
		}
		_ = g.rn.Step(m) // refusals are raft's own (a stale term, an unknown peer)
	}
	for _, id := range unr {
		g.rn.ReportUnreachable(id)
	}
	for _, s := range snaps {
		st := raft.SnapshotFinish
		if !s.ok {
			st = raft.SnapshotFailure
		}
		g.rn.ReportSnapshot(s.node, st)
	}
	g.proposeQueued(props)
	if forget {
		_ = g.rn.ForgetLeader()
	}
	if camp && !g.r.fenced.Load() {
		_ = g.rn.Campaign()
	}
	if tick && g.eager > 0 {
		g.eager--
		// PreVote makes a repeated campaign harmless: the term moves only
		// once a majority would vote. A candidate is left to its election.
		if bs := g.rn.BasicStatus(); bs.Lead != 0 {
			g.eager = 0
		} else if bs.RaftState == raft.StateFollower || bs.RaftState == raft.StatePreCandidate {
			_ = g.rn.Campaign()
		}
	}
	if tick {
		g.rn.Tick()
		n := g.ticks.Add(1)
		if g.leading.Load() && n%int64(g.d.cfg.PreferredCheckTicks) == 0 {
			g.maybeTransfer()
		}
		if g.leading.Load() && n%quiesceEveryTicks == 0 {
			g.maybeQuiesceLeader()
		}
	}
	for g.rn.HasReady() {
		if err := g.handleReady(); err != nil {
			g.broken = err
			g.log.WithError(err).Error("raft group stopped: its log cannot be written")
			err = fmt.Errorf("raft group %s: %w", g.key, err)
			for _, p := range append(append(g.pending, g.appended...), g.stopProposals(err)...) {
				p.fail(err)
			}
			g.pending, g.appended = nil, nil
			g.leading.Store(false)
			g.writable.Store(false)
			return
		}
	}
	g.publish(tick)
	if quiesceHB != nil {
		g.maybeQuiesceFollower(quiesceHB)
	}
}

func (g *raftGroup) handleReady() error {
	var roundAt time.Time
	if stages.On {
		roundAt = time.Now()
	}
	rd := g.rn.Ready()
	tr := g.d.transport()
	// A leader's messages (appends, heartbeats) go out before its own
	// write, so the followers' fsyncs run alongside its own (the Raft
	// thesis, 10.2.1; etcd's server does the same): raft counts the
	// leader's copy toward a commit only from its self-acknowledgement,
	// which Advance delivers after the write below, so nothing commits on
	// a copy the leader has not made durable. A candidate's or follower's
	// messages (votes, acknowledgements) promise what they wrote: after.
	// So do a leader's whose Ready also changed its term or vote (a sole
	// voter elected in one round, with learners to send to): raft's rule
	// is term and vote durable before any message.
	early := tr != nil && len(rd.Entries) > 0 && g.rn.BasicStatus().RaftState == raft.StateLeader &&
		!g.st.ChangesTermVote(rd.HardState)
	if early {
		g.send(tr, rd.Messages)
		tr.Flush()
	}
	if rd.Snapshot != nil && !raft.IsEmptySnap(rd.Snapshot) {
		if err := g.st.ApplySnapshot(rd.Snapshot); err == nil {
			g.snapshotConf(rd.Snapshot.GetMetadata())
			if g.r.remote != nil {
				// The remote records among the entries the snapshot
				// replaced were not applied here (remote.go).
				g.r.remote.MarkBehind(g.r.log.StartOffset())
			}
		} else if !errors.Is(err, raft.ErrSnapOutOfDate) {
			return err
		}
		g.failFrom(rd.Snapshot.GetMetadata().GetIndex() + 1)
		g.applied = max(g.applied, rd.Snapshot.GetMetadata().GetIndex())
		if hw, err := g.st.NextOffset(g.applied); err == nil {
			g.r.advance(hw)
		}
	}
	if len(rd.Entries) > 0 {
		g.failFrom(rd.Entries[0].GetIndex())
		if err := g.st.Append(rd.Entries); err != nil {
			return err
		}
		if stages.On {
			if early {
				stages.Since("L2 leader: append (write, fsync)", roundAt)
			} else {
				stages.Since("F2 follower: append (write, fsync)", roundAt)
			}
		}
		g.match(rd.Entries, roundAt)
	}
	if rd.HardState != nil && !raft.IsEmptyHardState(rd.HardState) {
		if err := g.st.SetHardState(rd.HardState); err != nil {
			return err
		}
	}
	// Only now, with entries and hard state durable, may messages go out.
	if tr != nil && !early {
		g.send(tr, rd.Messages)
		if stages.On && len(rd.Entries) > 0 {
			stages.Since("F3 follower: round start to answer queued", roundAt)
		}
	}
	if len(rd.CommittedEntries) > 0 {
		if err := g.apply(rd.CommittedEntries); err != nil {
			return err
		}
	}
	if len(rd.ReadStates) > 0 {
		ctxs := make([][]byte, len(rd.ReadStates))
		for i, rs := range rd.ReadStates {
			ctxs[i] = rs.RequestCtx
		}
		g.answerReads(ctxs)
	}
	g.rn.Advance(rd)
	return nil
}

// send sends a Ready's messages, then the quiesce markers the round owes.
func (g *raftGroup) send(tr Transport, msgs []*pb.Message) {
	joining := !g.hasVoters()
	for _, m := range msgs {
		if joining && m.GetType() == pb.MsgAppResp && m.GetReject() {
			m.Context = joiningMark // the leader sends a snapshot (sealForJoiner)
		}
		if m.GetType() == pb.MsgSnap {
			if _, ok := g.rebuilding[m.GetTo()]; ok {
				g.rebuilding[m.GetTo()] = true // its match counts once it answers (repair.go)
			}
		}
		if g.holdForLearner(m) {
			continue
		}
		tr.Send(g.key, m)
	}
	if g.quiescing {
		g.quiescing = false
		g.sendQuiesceMarkers(tr)
	}
}

// failFrom fails the appended proposals at or after index, which entries
// of another leader are about to overwrite.
func (g *raftGroup) failFrom(index uint64) {
	i := len(g.appended)
	for i > 0 && g.appended[i-1].index >= index {
		i--
	}
	for _, p := range g.appended[i:] {
		p.fail(ErrOutcomeUnknown)
	}
	g.appended = g.appended[:i]
}

// match gives the pending proposals the entries they became, now in the
// log, and notes the empty entry that starts this leader's term.
func (g *raftGroup) match(ents []*pb.Entry, roundAt time.Time) {
	term := g.rn.BasicStatus().GetTerm()
	for _, e := range ents {
		if raftlog.IsConfChange(e) {
			if e.GetTerm() == term {
				g.confIndex = e.GetIndex()
			}
			continue
		}
		if e.GetType() != pb.EntryNormal {
			continue
		}
		if len(e.Data) == 0 {
			// The term's first: raft turns a configuration change it
			// refuses into an empty entry too.
			if e.GetTerm() == term && g.termStartTerm != term {
				g.termStart, g.termStartTerm = e.GetIndex(), e.GetTerm()
			}
			continue
		}
		if len(g.pending) == 0 || g.pending[0].term != e.GetTerm() {
			continue
		}
		p := g.pending[0]
		g.pending = g.pending[1:]
		base, err1 := g.st.NextOffset(e.GetIndex() - 1)
		next, err2 := g.st.NextOffset(e.GetIndex())
		if err := errors.Join(err1, err2); err != nil {
			p.fail(fmt.Errorf("offset of entry %d: %w", e.GetIndex(), err))
			continue
		}
		p.index = e.GetIndex()
		p.info.BaseOffset, p.info.LastOffset = base, next-1
		if stages.On && !p.proposed.IsZero() {
			stages.Record("L1 leader: proposed to its round", roundAt.Sub(p.proposed))
			p.appendedAt = time.Now()
		}
		close(p.appended)
		g.appended = append(g.appended, p)
	}
}

// apply moves the high watermark to the end of the last committed entry
// and completes the proposals committed with it.
func (g *raftGroup) apply(ents []*pb.Entry) error {
	first, last := ents[0].GetIndex(), ents[len(ents)-1].GetIndex()
	for _, e := range ents {
		if raftlog.IsConfChange(e) {
			if err := g.applyConf(e); err != nil {
				return err
			}
			continue
		}
		if raftlog.IsCommand(e) {
			if err := g.command(e); err != nil {
				return err
			}
		}
	}
	hw, err := g.st.NextOffset(last)
	if err != nil {
		return fmt.Errorf("high watermark at entry %d: %w", last, err)
	}
	g.applied = last
	g.r.advance(hw)
	n := 0
	for _, p := range g.appended {
		if p.index > last {
			break
		}
		n++
		if p.index >= first && ents[p.index-first].GetTerm() != p.term {
			p.fail(ErrOutcomeUnknown)
			continue
		}
		if stages.On && !p.appendedAt.IsZero() {
			p.doneAt = time.Now()
			stages.Record("L4 leader: appended to committed", p.doneAt.Sub(p.appendedAt))
		}
		close(p.done)
	}
	g.appended = g.appended[n:]
	return nil
}

// publish makes the round's outcome visible to readers without mu, and
// fails proposals that can no longer become entries.
func (g *raftGroup) publish(tick bool) {
	bs := g.rn.BasicStatus()
	term := bs.GetTerm()
	leading := bs.RaftState == raft.StateLeader
	changed := g.lead.Load() != bs.Lead || g.leading.Load() != leading
	g.lead.Store(bs.Lead)
	g.term.Store(term)
	g.leading.Store(leading)
	writable := leading && g.termStartTerm == term && g.termStart > 0 && g.applied >= g.termStart
	if g.writable.Swap(writable) != writable {
		changed = true
	}
	if changed && g.d.cfg.OnLeaderChange != nil {
		g.d.cfg.OnLeaderChange()
	}
	if !leading && len(g.confWaits) > 0 {
		g.failConfWaits(ErrOutcomeUnknown)
	}
	// Every Ready is handled: a proposal not matched by now was dropped
	// from raft's log before it was persisted (leadership moved).
	for _, p := range g.pending {
		p.fail(ErrOutcomeUnknown)
	}
	g.pending = g.pending[:0]
	// Status copies every follower's progress: on ticks and leader
	// changes only, not on every message.
	if (tick && g.ticks.Load()%isrEveryTicks == 0) || changed {
		g.updateISR(leading, bs.Lead)
	}
}

// isrEveryTicks is how often a leader recomputes its ISR from its
// followers' progress.
const isrEveryTicks = 5

// updateISR: the leader and the followers whose log is within
// ISRMaxLagEntries of the leader's and that answered within
// ISRMaxIdleTicks; a follower knows only the leader.
func (g *raftGroup) updateISR(leading bool, lead uint64) {
	isr, silent := []int32{}, []int32{}
	if leading {
		st := g.rn.Status()
		last := st.Progress[g.self].Match
		now := g.ticks.Load()
		g.inMu.Lock()
		for _, b := range g.r.members() {
			id := RaftID(b)
			pr, ok := st.Progress[id]
			if !ok {
				continue
			}
			seen, heard := g.lastSeen[id]
			answering := id == g.self || (heard && now-seen <= int64(g.d.cfg.ISRMaxIdleTicks))
			if !answering && now > int64(g.d.cfg.ISRMaxIdleTicks) {
				silent = append(silent, b) // not before the leader could hear from it
			}
			if answering && (id == g.self || pr.Match+g.d.cfg.ISRMaxLagEntries >= last) {
				isr = append(isr, b)
			}
		}
		g.inMu.Unlock()
	} else if lead != 0 {
		isr = append(isr, brokerOf(lead))
	}
	changed := false
	if old := g.isr.Load(); old == nil || !slices.Equal(*old, isr) {
		g.isr.Store(&isr)
		changed = old != nil
	}
	if old := g.silent.Load(); old == nil || !slices.Equal(*old, silent) {
		g.silent.Store(&silent)
		changed = changed || old != nil
	}
	// The node publishes a leader's ISR and offline replicas in its
	// leadership claims.
	if changed && leading && g.d.cfg.OnLeaderChange != nil {
		g.d.cfg.OnLeaderChange()
	}
}

// maybeTransfer hands leadership back to the preferred (first) replica
// when it is alive, answering and caught up.
func (g *raftGroup) maybeTransfer() {
	pref := g.r.members()[0]
	if pref == g.r.self || !g.writable.Load() || !g.r.alive(pref) {
		return
	}
	st := g.rn.Status()
	if st.LeadTransferee != 0 {
		return
	}
	if g.isRebuilding(RaftID(pref), st) || g.peerFenced(RaftID(pref)) {
		return // its match is stale, or it is damaged (repair.go)
	}
	pr, ok := st.Progress[RaftID(pref)]
	g.inMu.Lock()
	seen, heard := g.lastSeen[RaftID(pref)]
	g.inMu.Unlock()
	if !ok || !heard || g.ticks.Load()-seen > int64(g.d.cfg.ElectionTick) || pr.Match < st.Progress[g.self].Match {
		return
	}
	g.log.WithField("to", pref).Info("handing leadership back to the preferred replica")
	g.rn.TransferLeader(RaftID(pref))
}

// memberFailed is gossip's word that broker id failed: a hint only. If it
// led, the replicas forget it (so they grant votes without waiting out its
// lease) and the next live replica in succession order campaigns at once.
func (g *raftGroup) memberFailed(id int32) {
	if !slices.Contains(g.r.members(), id) {
		return
	}
	if g.lead.Load() != RaftID(id) {
		g.wake() // a leader's ISR must see it go; a follower ticks again
		return
	}
	next := int32(-1)
	for _, b := range g.r.members() {
		if b != id && g.r.alive(b) {
			next = b
			break
		}
	}
	g.inMu.Lock()
	g.forget = true // which wakes the group
	g.campaign = next == g.r.self
	g.inMu.Unlock()
	g.w.kick(g)
}

// compactBelow makes the last committed entry that ends at or below
// offset the Raft snapshot, which moves the log start past it and deletes
// the segments below (raftlog.Compact). Never at or above the commit point.
func (g *raftGroup) compactBelow(offset int64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.broken != nil {
		return nil
	}
	i, ok, err := g.lastAppliedEndingBy(offset)
	if err != nil {
		return err
	}
	if !ok {
		// Nothing of the Raft log expired; the records sealed below it
		// (a compacted log's) may have.
		return g.st.DropSealedBefore(offset)
	}
	if err := g.st.Compact(i, g.confAt(i)); err != nil && !errors.Is(err, raft.ErrCompacted) {
		return fmt.Errorf("compact raft log of %s to entry %d: %w", g.key, i, err)
	}
	g.trimConfs()
	return nil
}

// sealForCleaning makes the records of the closed segments the snapshot's
// (raftlog.Seal), so the cleaner may rewrite them: the last applied entry
// ending at or below where the active segment starts. A leader holds back
// for a follower it hears from that has not yet matched those entries, so
// a follower a little behind gets entries, not a copy of the whole log.
func (g *raftGroup) sealForCleaning() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.broken != nil {
		return nil
	}
	i, ok, err := g.lastAppliedEndingBy(g.r.log.ClosedEnd())
	if err != nil || !ok {
		return err
	}
	if st := g.rn.Status(); st.RaftState == raft.StateLeader {
		for id, pr := range st.Progress {
			if id != g.self && pr.RecentActive && pr.Match < i {
				i = pr.Match
			}
		}
		if first, _ := g.st.FirstIndex(); i < first {
			return nil
		}
	}
	if err := g.st.Seal(i, g.confAt(i)); err != nil && !errors.Is(err, raft.ErrCompacted) {
		return fmt.Errorf("seal raft log of %s to entry %d: %w", g.key, i, err)
	}
	g.trimConfs()
	return nil
}

// lastAppliedEndingBy is the largest applied entry whose batch ends at or
// below offset, if one is still in the log. Called with mu held.
func (g *raftGroup) lastAppliedEndingBy(offset int64) (uint64, bool, error) {
	first, err := g.st.FirstIndex()
	if err != nil {
		return 0, false, err
	}
	// The largest i in [first-1, applied] whose entry ends at or below
	// offset; first-1 (the snapshot) always does.
	lo, hi := first-1, g.applied
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		end, err := g.st.NextOffset(mid)
		if err != nil {
			return 0, false, err
		}
		if end <= offset {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, lo >= first, nil
}

func (g *raftGroup) close() error {
	if !g.stop() {
		return nil
	}
	return g.st.Close()
}

// closeForShutdown is close that leaves the commit index to the node's
// shutdown checkpoint; nil if the group was closed already.
func (g *raftGroup) closeForShutdown() (*raftlog.CommitPoint, error) {
	if !g.stop() {
		return nil, nil
	}
	p, err := g.st.CloseForShutdown()
	return &p, err
}

// stop takes the group off its driver and fails what waits on it; false
// if it was stopped already.
func (g *raftGroup) stop() bool {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return false
	}
	g.closed = true
	g.stopCopy()
	for _, p := range append(append(g.pending, g.appended...), g.stopProposals(partition.ErrClosed)...) {
		p.fail(partition.ErrClosed)
	}
	g.pending, g.appended = nil, nil
	g.failConfWaits(partition.ErrClosed)
	g.mu.Unlock()
	g.d.remove(g)
	g.leading.Store(false)
	g.writable.Store(false)
	return true
}

// raftLogger sends raft's log lines to logrus: its info lines (elections,
// terms) at debug, as a busy node has many groups.
type raftLogger struct{ e *logrus.Entry }

func (l raftLogger) Debug(v ...any)                   { l.e.Debug(v...) }
func (l raftLogger) Debugf(format string, v ...any)   { l.e.Debugf(format, v...) }
func (l raftLogger) Error(v ...any)                   { l.e.Error(v...) }
func (l raftLogger) Errorf(format string, v ...any)   { l.e.Errorf(format, v...) }
func (l raftLogger) Info(v ...any)                    { l.e.Debug(v...) }
func (l raftLogger) Infof(format string, v ...any)    { l.e.Debugf(format, v...) }
func (l raftLogger) Warning(v ...any)                 { l.e.Warn(v...) }
func (l raftLogger) Warningf(format string, v ...any) { l.e.Warnf(format, v...) }
func (l raftLogger) Fatal(v ...any)                   { l.e.Fatal(v...) }
func (l raftLogger) Fatalf(format string, v ...any)   { l.e.Fatalf(format, v...) }
func (l raftLogger) Panic(v ...any)                   { l.e.Panic(v...) }
func (l raftLogger) Panicf(format string, v ...any)   { l.e.Panicf(format, v...) }
