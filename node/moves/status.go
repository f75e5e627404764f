package moves

// The moves under way as `spool rebalance status` shows them
// (adminapi.RebalanceStatus at GET /v1/rebalance): the catalog names every
// move; only a partition's leader knows where it stands (the group's
// configuration, how far each new replica holds the log), so the node
// asked groups the moves by leader and asks each leader, in parallel, for
// its own (?local=1). A leader that is down, unknown or silent leaves its
// moves "unknown", with why, and the rest of the answer stands.

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/spool-log/spool/adminapi"
	"github.com/spool-log/spool/node/replica"
)

// peerTimeout bounds one leader's answer.
const peerTimeout = 3 * time.Second

// maxStatusBody bounds a leader's answer (a few hundred bytes a move).
const maxStatusBody = 16 << 20

// Status is every move in the catalog (local: only those whose partition
// this node leads), with its progress.
func (m *Mover) Status(ctx context.Context, local bool) adminapi.RebalanceStatus {
	c := m.cfg.Cluster
	st := adminapi.RebalanceStatus{Paused: c.RebalancePaused(), Moves: []adminapi.MoveProgress{}}
	byLeader := map[int32][]int{}
	for _, e := range c.MovingTopics() {
		for _, mv := range e.Moves {
			mp := adminapi.MoveProgress{Topic: e.Name, Partition: mv.Partition, Replicas: e.Replicas[mv.Partition],
				Target: mv.Target, Adding: e.Adding(mv.Partition), Removing: e.Removing(mv.Partition),
				Leader: m.cfg.LeaderOf(e, mv.Partition), Step: adminapi.StepUnknown, StartedMs: mv.Started}
			if p, ok := m.cfg.Hosted(e.Name, mv.Partition, e.ID); ok && p.Replica.IsLeader() {
				m.leaderProgress(p, &mp)
			} else if local {
				continue
			} else if mp.Leader < 0 {
				mp.Error = "no leader known"
			} else {
				byLeader[mp.Leader] = append(byLeader[mp.Leader], len(st.Moves))
			}
			st.Moves = append(st.Moves, mp)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for leader, idx := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
			theirs, err := m.peerStatus(ctx, leader)
			mu.Lock()
			defer mu.Unlock()
			for _, i := range idx {
				mp := &st.Moves[i]
				if err != nil {
					mp.Error = err.Error()
					continue
				}
				found := false
				for _, t := range theirs.Moves {
					if t.Topic == mp.Topic && t.Partition == mp.Partition {
						*mp, found = t, true
						break
					}
				}
				if !found {
					mp.Error = fmt.Sprintf("broker %d does not lead it (leadership moving)", leader)
				}
			}
		}()
	}
	wg.Wait()
	for _, mp := range st.Moves {
		st.BytesToCopy += mp.BytesToCopy
		st.BytesCopied += mp.BytesCopied
	}
	return st
}

// leaderProgress fills in what p's leader knows of its move: the step (as
// step would take it next: step.go) and the new replicas' progress.
func (m *Mover) leaderProgress(p Hosted, mp *adminapi.MoveProgress) {
	r := p.Replica
	mp.Leader = m.cfg.Self
	conf, ok := r.Conf()
	if !ok {
		mp.Error = "not replicated"
		return
	}
	size, start, end := r.Size(), r.LogStartOffset(), r.LogEndOffset()
	for _, b := range mp.Adding {
		rp := adminapi.ReplicaProgress{Broker: b, EndOffset: end, Offset: start}
		if pr, ok := r.MemberProgress(b); ok {
			rp.Offset, rp.Snapshot, rp.CaughtUp = pr.Offset, pr.Snapshot, r.CaughtUp(b)
		}
		rp.Bytes = bytesBelow(size, start, end, rp.Offset)
		if rp.CaughtUp || slices.Contains(conf.Voters, b) {
			rp.Bytes = size
		}
		mp.NewReplicas = append(mp.NewReplicas, rp)
		mp.BytesToCopy += size
		mp.BytesCopied += rp.Bytes
	}
	mp.Step = stepName(conf, mp.Target, m.cfg.Self, r.CaughtUp)
}

// bytesBelow is how many of a log's size bytes lie below offset, in
// proportion to the offsets from start to end.
func bytesBelow(size, start, end, offset int64) int64 {
	if end <= start || offset >= end {
		return size
	}
	if offset <= start {
		return 0
	}
	return int64(float64(size) * float64(offset-start) / float64(end-start))
}

// stepName names the step step takes next from conf towards target
// (step.go, in its order).
func stepName(conf replica.Conf, target []int32, self int32, caughtUp func(int32) bool) string {
	if conf.Joint() {
		return adminapi.StepPromoting
	}
	for _, l := range conf.Learners {
		if !slices.Contains(target, l) {
			return adminapi.StepRemoving
		}
	}
	for _, b := range target {
		if !slices.Contains(conf.Voters, b) && !slices.Contains(conf.Learners, b) {
			return adminapi.StepAddingLearner
		}
	}
	if len(conf.Learners) > 0 {
		for _, l := range conf.Learners {
			if !caughtUp(l) {
				return adminapi.StepCatchingUp
			}
		}
		return adminapi.StepPromoting
	}
	for _, v := range conf.Voters {
		if !slices.Contains(target, v) {
			if v == self {
				return adminapi.StepHandingOff
			}
			return adminapi.StepRemoving
		}
	}
	return adminapi.StepRemoving // the voters are the target: the move is being recorded as ended
}

// peerStatus asks broker's admin API for the moves it leads.
func (m *Mover) peerStatus(ctx context.Context, broker int32) (adminapi.RebalanceStatus, error) {
	var out adminapi.RebalanceStatus
	mb, ok := m.cfg.Cluster.LiveBrokers()[broker]
	if !ok || mb.AdminAddr == "" {
		return out, fmt.Errorf("leader %d is down or unknown", broker)
	}
	ctx, cancel := context.WithTimeout(ctx, peerTimeout)
	defer cancel()
	if err := m.cfg.GetJSON(ctx, mb.AdminAddr, "/v1/rebalance", url.Values{"local": {"1"}}, maxStatusBody, &out); err != nil {
		return out, fmt.Errorf("leader %d: %w", broker, err)
	}
	return out, nil
}
