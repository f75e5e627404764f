package hosted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/adminapi"
	"github.com/spool-log/spool/internal/atomicfile"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/replica/raftlog"
	"github.com/spool-log/spool/partition"
)

// Repair: a replica of a replicated partition whose log holds a damaged
// batch (found by the scrubber, or marked again at open from the kept
// findings) is rebuilt from its peers rather than left serving a log with
// a hole. Until then the damage is fenced: a read starting at it fails
// (KAFKA_STORAGE_ERROR), and a follower serves no consumer anyway. The
// steps, one Repair pass every MendInterval:
//
//  1. The replica is fenced (replica.Fence: it takes no leadership from
//     then on). A damaged leader hands leadership to a voter that holds
//     everything committed (replica.HandOffTarget) and goes on once it
//     follows.
//  2. A damaged follower asks its leader whether the rest of the group
//     is a caught-up majority: a majority of the voters, itself left out,
//     holding every entry committed (replica.CaughtUpWithout). If not, it
//     waits, fenced, and says so (State "waiting", the Detail why).
//  3. It leaves the set (claimed, so no reconcile opens it meanwhile) and
//     closes: it acknowledges nothing from then on, and asks again (for a
//     few seconds, as the others catch up) until a majority other than
//     itself holds every entry committed, since one committed just before
//     the close may have counted it; the leader, told so, stops counting
//     the match it remembers for it until it has taken a snapshot. Step 2 asks only that a majority of
//     the others be in sync: under load the others trail the commit by a
//     few entries while it still acknowledges.
//  4. Its directory goes into quarantine whole (what was damaged, and
//     what recovery cut, stay there for the operator), and a new empty
//     one gets its term and vote (raftlog.CarryVote: it must not vote
//     twice in a term) and a rebuildFile naming the repair. Open sees that
//     file and opens the replica joining: no configuration, no vote, the
//     leader's snapshot first (the path of a replaced disk).
//  5. Once the rebuilt replica has the group's configuration, knows a
//     leader and its high watermark is back where the damaged one's was,
//     it is repaired: rebuildFile goes, and Report is told.
//
// Every step is reported (RepairConfig.Report), for the scrub findings.
// A crash between 4 and 5 reopens from rebuildFile (joining again, if the
// snapshot had not arrived: Open ignores Join once the replica has Raft
// state). A single copy has no peer to rebuild from: its damage stays
// fenced, as before.

// rebuildFile, in a partition directory, marks a replica rebuilt from its
// peers and not yet caught up; it holds the repair (adminapi.ScrubRepair).
const rebuildFile = "repair-rebuild.json"

// maxRebuildFileBytes bounds rebuildFile as read back.
const maxRebuildFileBytes = 1 << 20

// Repair is one damaged replica and its rebuild, as reported.
type Repair = adminapi.ScrubRepair

// RepairConfig is what rebuilding damaged replicas needs from the owner.
type RepairConfig struct {
	// Ask asks broker leader, which leads p's group, CaughtUpWithout this
	// node (a call to its admin API), bounded by ctx; rebuild tells the
	// leader that this replica throws its log away if the answer is
	// Enough.
	Ask func(ctx context.Context, p *Partition, leader int32, rebuild bool) (replica.CaughtUp, error)
	// SetAside moves a damaged replica's directory into quarantine and
	// returns where it went.
	SetAside func(dir, why string, fields logrus.Fields) (string, error)
	// Report is told of every repair as it waits, starts and ends.
	Report func(Repair)
}

// askTimeout bounds each question to a leader.
const askTimeout = 5 * time.Second

// repairState is Repair's memory between passes: what each waiting
// replica last reported (so a wait is logged once, not every pass).
type repairState struct {
	mu      sync.Mutex
	waiting map[Key]string
}

// Rebuilding tells whether the partition directory dir holds a replica
// being rebuilt from its peers: Open must open it joining.
func Rebuilding(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, rebuildFile))
	return err == nil
}

// readRebuild reads dir's rebuildFile.
func readRebuild(dir string) (Repair, bool) {
	var r Repair
	f, err := os.Open(filepath.Join(dir, rebuildFile))
	if err != nil {
		return r, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRebuildFileBytes+1))
	if err != nil || len(b) > maxRebuildFileBytes || json.Unmarshal(b, &r) != nil {
		return r, false
	}
	return r, true
}

// Repair runs one pass over the set's replicas (the owner calls it every
// MendInterval): it moves each damaged one of a replicated partition a
// step along, and ends the rebuilds that caught up.
func (s *Set[S]) Repair(ctx context.Context) {
	rc := s.cfg.Repair
	if rc == nil {
		return
	}
	st := &s.repair
	st.mu.Lock()
	if st.waiting == nil {
		st.waiting = map[Key]string{}
	}
	st.mu.Unlock()
	rebuilt := false
	for _, p := range s.All() {
		if !p.Replica.Replicated() {
			continue
		}
		if Rebuilding(p.Dir) {
			s.finishRebuild(p)
			continue
		}
		damage := p.Replica.KnownCorrupt()
		key := Key{p.Topic, p.Index}
		if len(damage) == 0 {
			st.mu.Lock()
			delete(st.waiting, key)
			st.mu.Unlock()
			continue
		}
		if s.repairOne(ctx, p, damage) {
			rebuilt = true
		}
	}
	if rebuilt {
		// Opens the rebuilt replicas, joining (and any a failed step
		// left closed, from their intact directories).
		if err := s.Reconcile(""); err != nil {
			s.cfg.Log.WithError(err).Warn("reopening replicas after a repair failed; trying again later")
		}
	}
}

// wait reports p's damage as fenced and waiting for why; logged when why
// changes.
func (s *Set[S]) wait(p *Partition, damage []partition.Corruption, why string) {
	key := Key{p.Topic, p.Index}
	s.repair.mu.Lock()
	same := s.repair.waiting[key] == why
	s.repair.waiting[key] = why
	s.repair.mu.Unlock()
	if same {
		return
	}
	s.cfg.Log.WithFields(logrus.Fields{"topic": p.Topic, "partition": p.Index, "damaged_batches": len(damage)}).
		Warn("damaged replica waits to be rebuilt from its peers, the damage fenced (not served): " + why)
	s.cfg.Repair.Report(Repair{Topic: p.Topic, Partition: p.Index, State: "waiting", Detail: why, Damage: damage,
		HighWatermark: p.Replica.HighWatermark(), FoundAt: time.Now().UTC()})
}

// repairOne moves damaged replica p a step along; it returns whether it
// took p out of the set (closed, rebuilt or not), for a reconcile to open
// it again.
func (s *Set[S]) repairOne(ctx context.Context, p *Partition, damage []partition.Corruption) bool {
	rc := s.cfg.Repair
	log := s.cfg.Log.WithFields(logrus.Fields{"topic": p.Topic, "partition": p.Index})
	p.Replica.Fence()
	if p.Replica.IsLeader() {
		to, ok := p.Replica.HandOffTarget()
		if !ok {
			s.wait(p, damage, "it leads, and no other voter holds everything committed to hand leadership to")
			return false
		}
		log.WithField("to", to).Warn("damaged replica leads: handing leadership over before its rebuild")
		p.Replica.TransferLeadership(to)
		if !awaitFollower(ctx, p.Replica) {
			s.wait(p, damage, fmt.Sprintf("handing leadership to broker %d first", to))
			return false
		}
	}
	leader := p.Replica.Leader()
	if leader < 0 {
		s.wait(p, damage, "no leader known")
		return false
	}
	ask := func(rebuild bool) (replica.CaughtUp, error) {
		actx, cancel := context.WithTimeout(ctx, askTimeout)
		defer cancel()
		return rc.Ask(actx, p, leader, rebuild)
	}
	cu, err := ask(false)
	if why := notEnough(leader, cu, err, false); why != "" {
		s.wait(p, damage, why)
		return false
	}
	hw := p.Replica.HighWatermark()
	key := Key{p.Topic, p.Index}
	done, ok := s.claim(p)
	if !ok {
		return false // a reconcile is at it: next pass
	}
	defer func() {
		s.mu.Lock()
		if s.claims[key] == done {
			delete(s.claims, key)
		}
		s.mu.Unlock()
		close(done)
	}()
	if err := p.Replica.Release(); err != nil {
		log.WithError(err).Warn("closing the damaged replica")
	}
	// It acknowledges nothing now: what the leader says holds from here
	// on. The others catch up past what it acknowledged last.
	deadline := time.Now().Add(catchUpWait)
	for {
		cu, err = ask(true)
		why := notEnough(leader, cu, err, true)
		if why == "" {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil || !cu.Likely() {
			log.WithError(err).WithField("why", why).Warn("the rest of the group did not catch up as the damaged replica closed; reopening it fenced")
			return true
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	now := time.Now().UTC()
	rep := Repair{Topic: p.Topic, Partition: p.Index, State: "rebuilding", Damage: damage, HighWatermark: hw,
		Detail:  fmt.Sprintf("from leader %d; %d of the other voters held everything committed (a majority is %d)", leader, cu.Others, cu.Quorum),
		FoundAt: now, StartedAt: now}
	if err := s.setAside(p, &rep); err != nil {
		log.WithError(err).Error("setting the damaged replica aside failed; reopening it fenced")
		return true
	}
	s.repair.mu.Lock()
	delete(s.repair.waiting, key)
	s.repair.mu.Unlock()
	log.WithFields(logrus.Fields{"quarantine": rep.Quarantine, "leader": leader, "high_watermark": hw}).
		Warn("damaged replica set aside in quarantine; rejoining with no log, to be rebuilt from its peers")
	rc.Report(rep)
	return true
}

// handOffWait bounds the wait for a leadership hand-off within a pass:
// raft gives a transfer an election timeout.
const handOffWait = 3 * time.Second

// awaitFollower waits until r, which handed leadership over, follows
// another leader; false if it does not within handOffWait.
func awaitFollower(ctx context.Context, r *replica.Replica) bool {
	deadline := time.Now().Add(handOffWait)
	for time.Now().Before(deadline) {
		if !r.IsLeader() && r.Leader() >= 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return false
}

// catchUpWait bounds the wait, once the damaged replica closed, for the
// others to hold everything committed.
const catchUpWait = 5 * time.Second

// notEnough says why leader's answer (cu, err) does not let this replica
// throw its log away (strict), or close to try (not strict: the others in
// sync), or "" if it does.
func notEnough(leader int32, cu replica.CaughtUp, err error, strict bool) string {
	switch {
	case err != nil:
		return fmt.Sprintf("asking leader %d: %v", leader, err)
	case !cu.Leader:
		return fmt.Sprintf("broker %d no longer leads", leader)
	case cu.Joint:
		return "a configuration change is under way"
	case strict && !cu.Enough():
		return fmt.Sprintf("%d of the other voters hold everything committed; a majority is %d", cu.Others, cu.Quorum)
	case !strict && !cu.Likely():
		return fmt.Sprintf("%d of the other voters are in sync with the leader; a majority is %d", cu.InSync, cu.Quorum)
	}
	return ""
}

// claim takes open partition p out of the set and claims its key, so no
// reconcile opens it until the claim's channel is closed; false if p is
// no longer the open one or a reconcile holds the key.
func (s *Set[S]) claim(p *Partition) (chan struct{}, bool) {
	s.planMu.Lock()
	defer s.planMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	key := Key{p.Topic, p.Index}
	if s.parts[key] != p {
		return nil, false
	}
	if _, busy := s.claims[key]; busy {
		return nil, false
	}
	delete(s.parts, key)
	done := make(chan struct{})
	s.claims[key] = done
	return done, true
}

// setAside moves closed replica p's directory into quarantine and makes a
// new one that opens joining: the old term and vote, and rebuildFile
// holding rep (its Quarantine set here).
func (s *Set[S]) setAside(p *Partition, rep *Repair) error {
	q, err := s.cfg.Repair.SetAside(p.Dir, "damaged replica rebuilt from its peers",
		logrus.Fields{"topic": p.Topic, "partition": p.Index, "topic_id": p.TopicID.String()})
	if err != nil {
		return err
	}
	rep.Quarantine = q
	if err := os.Mkdir(p.Dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("new directory for the rebuilt replica: %w", err)
	}
	if err := raftlog.CarryVote(q, p.Dir); err != nil {
		return err
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	// Written last: a crash before it leaves a directory with a vote and
	// no log, which opens joining anyway (the catalog records a leader).
	return atomicfile.Write(filepath.Join(p.Dir, rebuildFile), b, 0o644)
}

// finishRebuild ends p's rebuild once it caught up: it has the group's
// configuration, knows a leader, and its high watermark is back at the
// damaged replica's.
func (s *Set[S]) finishRebuild(p *Partition) {
	rep, ok := readRebuild(p.Dir)
	conf, _ := p.Replica.Conf()
	if len(conf.Voters) == 0 || p.Replica.Leader() < 0 || (ok && p.Replica.HighWatermark() < rep.HighWatermark) {
		return
	}
	if err := os.Remove(filepath.Join(p.Dir, rebuildFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.cfg.Log.WithError(err).WithField("topic", p.Topic).WithField("partition", p.Index).Warn("ending a rebuild")
		return
	}
	if !ok {
		rep = Repair{Topic: p.Topic, Partition: p.Index}
	}
	rep.State, rep.RepairedAt = "repaired", time.Now().UTC()
	rep.Detail = fmt.Sprintf("rebuilt from its peers up to offset %d (leader %d)", p.Replica.HighWatermark(), p.Replica.Leader())
	s.cfg.Log.WithFields(logrus.Fields{"topic": p.Topic, "partition": p.Index, "high_watermark": p.Replica.HighWatermark(), "quarantine": rep.Quarantine}).
		Info("damaged replica rebuilt from its peers")
	s.cfg.Repair.Report(rep)
}
