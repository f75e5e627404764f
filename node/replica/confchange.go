package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/sirupsen/logrus"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"

	"github.com/spool-log/spool/partition"
)

// Configuration changes move a partition's replicas (a reassignment):
// raft's ConfChangeV2, proposed by the leader, committed like any entry and
// applied by every replica at its place in the log.
//
//   - A change of one member is raft's simple change (add a learner,
//     promote one to voter, remove one); more than one at once enters a
//     joint configuration (old and new voters both need a majority), left
//     explicitly by LeaveJoint, so a restarted leader or a new one finds
//     where the move stood in the configuration itself.
//   - The entries are raftlog's sidecar entries (no Kafka offset). raft
//     restores the snapshot's configuration only; openRaft replays the
//     changes applied after it (restoreConf), since raft hands back no
//     entry below Config.Applied. Every snapshot taken (Compact, Seal,
//     DeleteRecords) records the configuration as of its own entry
//     (confAt), not the latest.
//   - A replica joining (Config.Join) starts with no configuration and an
//     empty log: it must not take entries from index 1, as it would not
//     know the configuration the group began with (raftlog's bootstrap
//     snapshot, which no entry carries), nor the offset its records start
//     at. So every replica, on applying a change that adds a learner,
//     seals its log at that entry (raftlog.Seal: the records stay): the
//     leader's log then starts after it, and the learner gets the
//     snapshot, whose configuration names it and the voters, and copies
//     its records (snapcopy.go). The cost: a voter that was down across
//     the change gets a snapshot copy rather than entries. A restart
//     replaying such a change seals again (restoreConf). Until its
//     snapshot arrives a joining replica votes for nobody (it cannot tell
//     the group's candidates from others), and marks its refused appends
//     so the leader seals past what it remembers of it (sealForJoiner):
//     a voter whose disk was replaced comes back the same way.
//   - The leader never removes itself: ChangeConf refuses (ErrLeaderLeaving)
//     and the caller transfers leadership first. Should a leader find
//     itself removed all the same, raft's StepDownOnRemoval has it step
//     down.

// ConfKind is a change of one member.
type ConfKind int

const (
	AddLearner ConfKind = iota // a new replica, not counted for commits
	AddVoter                   // a learner promoted (or a new voter)
	RemoveMember
)

// ConfChange changes broker's membership of the group.
type ConfChange struct {
	Kind   ConfKind
	Broker int32
}

var (
	// ErrConfPending: a change is proposed and not yet applied; raft takes
	// one at a time.
	ErrConfPending = errors.New("a configuration change is already under way")
	// ErrJoint: the group is in a joint configuration; LeaveJoint first.
	ErrJoint = errors.New("the group is in a joint configuration: leave it first")
	// ErrLeaderLeaving: the change would remove or demote the leader;
	// transfer leadership to a remaining voter first.
	ErrLeaderLeaving = errors.New("the change removes the leader: transfer leadership first")
	// ErrNotReplicated: a single copy has no group to change.
	ErrNotReplicated = errors.New("the partition has a single copy, not a Raft group")
)

type confPoint struct {
	index uint64
	cs    *pb.ConfState
}

type confWait struct {
	done chan struct{}
	err  error
}

// Conf is a group's configuration as a replica applied it, in broker ids.
type Conf struct {
	Voters         []int32 // the incoming voters
	VotersOutgoing []int32 // the outgoing voters of a joint configuration
	Learners       []int32
	LearnersNext   []int32 // voters the joint configuration demotes to learners on leaving
}

// Joint tells whether the configuration is joint.
func (c Conf) Joint() bool { return len(c.VotersOutgoing) > 0 }

func brokers(ids []uint64) []int32 {
	out := make([]int32, 0, len(ids))
	for _, id := range ids {
		out = append(out, brokerOf(id))
	}
	slices.Sort(out)
	return out
}

func confOf(cs *pb.ConfState) Conf {
	return Conf{Voters: brokers(cs.GetVoters()), VotersOutgoing: brokers(cs.GetVotersOutgoing()),
		Learners: brokers(cs.GetLearners()), LearnersNext: brokers(cs.GetLearnersNext())}
}

// Conf is the group's configuration as this replica applied it (ok false
// for a single copy).
func (r *Replica) Conf() (Conf, bool) {
	if r.rg == nil {
		return Conf{}, false
	}
	r.rg.mu.Lock()
	defer r.rg.mu.Unlock()
	return confOf(r.rg.conf), true
}

// ChangeConf proposes changes (leader only) and returns once this replica
// applied them: one change is simple; several enter a joint configuration,
// which LeaveJoint leaves. ErrOutcomeUnknown (leadership moved, or ctx
// ended) means it may still apply: read Conf, from the new leader.
func (r *Replica) ChangeConf(ctx context.Context, changes ...ConfChange) error {
	if r.rg == nil {
		return ErrNotReplicated
	}
	if len(changes) == 0 {
		return nil
	}
	singles := make([]*pb.ConfChangeSingle, 0, len(changes))
	for _, c := range changes {
		t := pb.ConfChangeAddNode
		switch c.Kind {
		case AddLearner:
			t = pb.ConfChangeAddLearnerNode
		case RemoveMember:
			t = pb.ConfChangeRemoveNode
		}
		singles = append(singles, &pb.ConfChangeSingle{Type: t.Enum(), NodeId: new(RaftID(c.Broker))})
	}
	return r.rg.proposeConf(ctx, singles)
}

// LeaveJoint leaves a joint configuration (leader only); nothing if the
// configuration is not joint.
func (r *Replica) LeaveJoint(ctx context.Context) error {
	if r.rg == nil {
		return ErrNotReplicated
	}
	return r.rg.proposeConf(ctx, nil)
}

// CaughtUp tells, on the leader, whether broker's replica holds the
// leader's snapshot and its log up to a few entries (catchUpSlack, or
// DriverConfig.ISRMaxLagEntries if smaller), and answered within an
// election timeout: a learner ready to be promoted, or a voter ready to
// take leadership. Not every committed entry: under a steady load a
// follower's match trails the commit by the appends in flight.
func (r *Replica) CaughtUp(broker int32) bool {
	g := r.rg
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.broken != nil {
		return false
	}
	st := g.rn.Status()
	if st.RaftState != raft.StateLeader {
		return false
	}
	pr, ok := st.Progress[RaftID(broker)]
	if !ok {
		return false
	}
	if broker == r.self {
		return true
	}
	g.inMu.Lock()
	seen, heard := g.lastSeen[RaftID(broker)]
	g.inMu.Unlock()
	last := st.Progress[g.self].Match
	first, err := g.st.FirstIndex()
	if err != nil || pr.State == tracker.StateSnapshot || pr.Match+1 < first {
		return false
	}
	return heard && g.ticks.Load()-seen <= int64(g.d.cfg.ElectionTick) && pr.Match+min(g.d.cfg.ISRMaxLagEntries, catchUpSlack) >= last
}

// catchUpSlack is how many entries behind the leader's log a replica may
// be and count as caught up.
const catchUpSlack = 256

func (g *raftGroup) proposeConf(ctx context.Context, singles []*pb.ConfChangeSingle) error {
	g.mu.Lock()
	switch {
	case g.closed:
		g.mu.Unlock()
		return partition.ErrClosed
	case !g.writable.Load() || g.broken != nil:
		g.mu.Unlock()
		return ErrNotLeader
	}
	joint := len(g.conf.GetVotersOutgoing()) > 0
	switch {
	case len(singles) == 0 && !joint:
		g.mu.Unlock()
		return nil
	case len(singles) > 0 && joint:
		g.mu.Unlock()
		return ErrJoint
	case g.confIndex > g.applied || len(g.confWaits) > 0:
		g.mu.Unlock()
		return ErrConfPending
	}
	for _, c := range singles {
		if c.GetNodeId() == g.self && c.GetType() != pb.ConfChangeAddNode {
			g.mu.Unlock()
			return ErrLeaderLeaving
		}
	}
	if len(singles) == 0 && !slices.Contains(g.conf.GetVoters(), g.self) {
		g.mu.Unlock()
		return ErrLeaderLeaving
	}
	g.confSeq++
	id := binary.BigEndian.AppendUint64([]byte("conf"), g.confSeq)
	cc := &pb.ConfChangeV2{Changes: singles, Context: id}
	if len(singles) > 1 {
		cc.Transition = pb.ConfChangeTransitionJointExplicit.Enum()
	}
	g.asleep.Store(false)
	if err := g.rn.ProposeConfChange(cc); err != nil {
		g.mu.Unlock()
		if errors.Is(err, raft.ErrProposalDropped) {
			return ErrNotLeader
		}
		return fmt.Errorf("propose configuration change to %s: %w", g.key, err)
	}
	w := &confWait{done: make(chan struct{})}
	if g.confWaits == nil {
		g.confWaits = map[string]*confWait{}
	}
	g.confWaits[string(id)] = w
	g.mu.Unlock()
	g.w.kick(g)
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		g.mu.Lock()
		delete(g.confWaits, string(id))
		g.mu.Unlock()
		return fmt.Errorf("%w: %w", ErrOutcomeUnknown, ctx.Err())
	}
}

// failConfWaits ends every wait for a change with err. Under mu.
func (g *raftGroup) failConfWaits(err error) {
	for k, w := range g.confWaits {
		w.err = err
		close(w.done)
		delete(g.confWaits, k)
	}
}

func confChangeOf(e *pb.Entry) (*pb.ConfChangeV2, error) {
	if e.GetType() == pb.EntryConfChange {
		var cc pb.ConfChange
		if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
			return nil, fmt.Errorf("entry %d: configuration change: %w", e.GetIndex(), err)
		}
		return cc.AsV2(), nil
	}
	var cc pb.ConfChangeV2
	if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
		return nil, fmt.Errorf("entry %d: configuration change: %w", e.GetIndex(), err)
	}
	return &cc, nil
}

// applyConf applies a committed configuration change. Under mu, in the
// round's apply.
func (g *raftGroup) applyConf(e *pb.Entry) error {
	cc, err := confChangeOf(e)
	if err != nil {
		return err
	}
	if !g.hasVoters() {
		// Only a replica that took entries before the leader's snapshot
		// can get here (raft.go refuses the append that would let it);
		// raft would panic ("removed all voters") and stop the node with
		// it. This group stops instead, reported.
		return fmt.Errorf("entry %d: a configuration change, applied with no configuration (entries taken before the leader's snapshot)", e.GetIndex())
	}
	cs := g.rn.ApplyConfChange(cc)
	g.conf = cs
	g.confs = append(g.confs, confPoint{e.GetIndex(), cs})
	g.setMembers()
	if g.leading.Load() && g.d.cfg.OnLeaderChange != nil {
		g.d.cfg.OnLeaderChange() // the node publishes a leader's voters
	}
	for _, c := range cc.GetChanges() {
		if c.GetType() != pb.ConfChangeAddLearnerNode {
			continue
		}
		// The learner must get a snapshot naming it (see the top).
		if err := g.st.Seal(e.GetIndex(), cs); err != nil && !errors.Is(err, raft.ErrCompacted) {
			return fmt.Errorf("entry %d: seal for a learner: %w", e.GetIndex(), err)
		}
		g.trimConfs()
		break
	}
	if w, ok := g.confWaits[string(cc.GetContext())]; ok {
		close(w.done)
		delete(g.confWaits, string(cc.GetContext()))
	}
	g.log.WithFields(logrus.Fields{"index": e.GetIndex(), "voters": confOf(cs).Voters, "outgoing": confOf(cs).VotersOutgoing,
		"learners": confOf(cs).Learners}).Info("raft configuration changed")
	return nil
}

// restoreConf brings the new RawNode's configuration, the snapshot's, to
// what was applied: the changes of the entries after the snapshot up to
// the applied index, which raft will not hand back.
func (g *raftGroup) restoreConf() error {
	_, cs, err := g.st.InitialState()
	if err != nil {
		return err
	}
	g.conf = cs
	g.confs = []confPoint{{g.st.SnapshotIndex(), cs}}
	var seal confPoint
	for _, e := range g.st.ConfEntries(g.st.SnapshotIndex()+1, g.applied) {
		cc, err := confChangeOf(e)
		if err != nil {
			return err
		}
		if !g.hasVoters() {
			// As applyConf refuses it: raft would panic.
			return fmt.Errorf("entry %d: a configuration change, with no configuration to apply it to (entries taken before the leader's snapshot)", e.GetIndex())
		}
		g.conf = g.rn.ApplyConfChange(cc)
		g.confs = append(g.confs, confPoint{e.GetIndex(), g.conf})
		if slices.ContainsFunc(cc.GetChanges(), func(c *pb.ConfChangeSingle) bool { return c.GetType() == pb.ConfChangeAddLearnerNode }) {
			seal = confPoint{e.GetIndex(), g.conf}
		}
	}
	// The applied index is the persisted commit, which may be past what
	// was applied before a crash: a change that adds a learner replayed
	// here may never have sealed the log (applyConf), and must, or the
	// learner could be sent entries its configuration does not follow
	// from. Sealing again where it did is harmless.
	if seal.cs != nil {
		if err := g.st.Seal(seal.index, seal.cs); err != nil && !errors.Is(err, raft.ErrCompacted) {
			return fmt.Errorf("entry %d: seal for a learner: %w", seal.index, err)
		}
		g.trimConfs()
	}
	g.setMembers()
	return nil
}

// snapshotConf takes a snapshot's configuration, which raft has restored.
func (g *raftGroup) snapshotConf(md *pb.SnapshotMetadata) {
	g.conf = proto.CloneOf(pb.EnsureConfState(md.GetConfState()))
	g.confs = []confPoint{{md.GetIndex(), g.conf}}
	g.setMembers()
}

// confAt is the configuration as of entry i (applied, at or after the
// snapshot). Under mu; called by raftlog under its own lock, so it must not
// call the Storage.
func (g *raftGroup) confAt(i uint64) *pb.ConfState {
	for k := len(g.confs) - 1; k > 0; k-- {
		if g.confs[k].index <= i {
			return g.confs[k].cs
		}
	}
	return g.confs[0].cs // the snapshot's
}

// trimConfs forgets the configurations before the snapshot's (the last
// at or below its index), which confAt no longer asks for. Under mu.
func (g *raftGroup) trimConfs() {
	snap := g.st.SnapshotIndex()
	k := 0
	for k+1 < len(g.confs) && g.confs[k+1].index <= snap {
		k++
	}
	g.confs = g.confs[k:]
}

// setMembers publishes the voters (incoming and outgoing) in the
// catalog's order, then any the catalog does not list, and the learners.
func (g *raftGroup) setMembers() {
	cs := g.conf
	voters := append(slices.Clone(cs.GetVoters()), cs.GetVotersOutgoing()...)
	pref := *g.r.pref.Load()
	members := make([]int32, 0, len(voters))
	for _, b := range pref {
		if slices.Contains(voters, RaftID(b)) && !slices.Contains(members, b) {
			members = append(members, b)
		}
	}
	for _, b := range brokers(voters) {
		if !slices.Contains(members, b) {
			members = append(members, b)
		}
	}
	learners := brokers(append(slices.Clone(cs.GetLearners()), cs.GetLearnersNext()...))
	g.members.Store(&members)
	g.learners.Store(&learners)
}

func (g *raftGroup) hasLearner(b int32) bool {
	l := g.learners.Load()
	return l != nil && slices.Contains(*l, b)
}

// joiningMark marks a refused append from a replica that has no
// configuration yet (a joining replica, Config.Join): raft's own refusal
// carries no Context, and the leader reads none from it.
var joiningMark = []byte("spool-joining")

// hasVoters tells whether the applied configuration names any voter: not
// so for a joining replica until the leader's snapshot reaches it. Under mu.
func (g *raftGroup) hasVoters() bool {
	return len(g.conf.GetVoters())+len(g.conf.GetVotersOutgoing()) > 0
}

// sealForJoiner, on the leader, makes sure a joining replica (from, whose
// log ends at hint) gets a snapshot rather than entries: a replica with no
// configuration must not take entries from the group's first (the
// starting voters are in no entry, only in the bootstrap snapshot), nor
// from any index whose configuration it does not know. Raft sends from
// past the larger of the hint and what it last knew the replica to hold
// (its match, which raft never lowers: a voter whose disk was replaced
// keeps it). A leader whose log still holds that entry seals it at the
// applied index (raftlog.Seal, records kept), so raft finds it compacted
// and sends the snapshot, whose configuration names the replica if the
// group counts it; or waits for the applied index to pass it. Under mu.
//
// A replica that is not joining refuses appends when its log diverged,
// which raft resolves itself; only one whose log ends below the match the
// leader remembers (it lost entries: a replaced disk, the group started
// again from the replica list) needs the snapshot too, as raft would
// probe above its end forever.
func (g *raftGroup) sealForJoiner(from, hint uint64, joining bool) {
	if !g.leading.Load() {
		return
	}
	st := g.rn.Status()
	if st.RaftState != raft.StateLeader {
		return
	}
	need := hint
	pr, ok := st.Progress[from]
	if ok {
		need = max(need, pr.Match)
	}
	if !joining && (!ok || pr.Match <= hint) {
		return
	}
	if g.st.SnapshotIndex() > need || g.applied <= need {
		return
	}
	if err := g.st.Seal(g.applied, g.confAt(g.applied)); err != nil && !errors.Is(err, raft.ErrCompacted) {
		g.log.WithError(err).Warn("sealing the log for a joining replica")
		return
	}
	g.trimConfs()
	g.log.WithFields(logrus.Fields{"index": g.applied, "replica": brokerOf(from)}).Info("sealed the log: a joining replica gets the snapshot")
}
