package node

// The moves under way as `spool rebalance status` shows them
// (admin.RebalanceStatus at GET /v1/rebalance): the catalog names every
// move; only a partition's leader knows where it stands (the group's
// configuration, how far each new replica holds the log), so the node
// asked groups the moves by leader and asks each leader, in parallel,
// for its own (?local=1). A leader that is down, unknown or silent leaves
// its moves "unknown", with why, and the rest of the answer stands.

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/topics"
)

// rebalancePeerTimeout bounds one leader's answer.
const rebalancePeerTimeout = 3 * time.Second

// maxRebalanceBody bounds a leader's answer (a few hundred bytes a move).
const maxRebalanceBody = 16 << 20

func (v adminView) RebalanceStatus(ctx context.Context, local bool) admin.RebalanceStatus {
	return v.n.rebalanceStatus(ctx, local)
}

func (v adminView) SetRebalancePaused(paused bool) error { return v.n.agent.SetRebalancePaused(paused) }

// rebalanceStatus is every move in the catalog (local: only those whose
// partition this node leads), with its progress.
func (n *Node) rebalanceStatus(ctx context.Context, local bool) admin.RebalanceStatus {
	st := admin.RebalanceStatus{Paused: n.agent.RebalancePaused(), Moves: []admin.MoveProgress{}}
	byLeader := map[int32][]int{}
	for _, e := range n.agent.MovingTopics() {
		spec := topics.FromEntry(e)
		for _, m := range e.Moves {
			mp := admin.MoveProgress{Topic: e.Name, Partition: m.Partition, Replicas: e.Replicas[m.Partition],
				Target: m.Target, Adding: e.Adding(m.Partition), Removing: e.Removing(m.Partition),
				Leader: n.leaderOf(spec, m.Partition), Step: admin.StepUnknown, StartedMs: m.Started}
			if p := n.hostedPartition(e.Name, m.Partition, TopicID(e.ID)); p != nil && p.Replica.IsLeader() {
				n.leaderProgress(p, &mp)
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
			theirs, err := n.peerRebalance(ctx, leader)
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
	for _, m := range st.Moves {
		st.BytesToCopy += m.BytesToCopy
		st.BytesCopied += m.BytesCopied
	}
	return st
}

// leaderProgress fills in what p's leader knows of its move: the step
// (as moveStep would take it next: reassign.go) and the new replicas'
// progress.
func (n *Node) leaderProgress(p *localPartition, mp *admin.MoveProgress) {
	r := p.Replica
	mp.Leader = n.cfg.NodeID
	conf, ok := r.Conf()
	if !ok {
		mp.Error = "not replicated"
		return
	}
	size, start, end := r.Size(), r.LogStartOffset(), r.LogEndOffset()
	for _, b := range mp.Adding {
		rp := admin.ReplicaProgress{Broker: b, EndOffset: end, Offset: start}
		if pr, ok := r.MemberProgress(b); ok {
			rp.Offset, rp.Snapshot, rp.CaughtUp = pr.Offset, pr.Snapshot, r.CaughtUp(b)
		}
		rp.Bytes = bytesBelow(size, start, end, rp.Offset)
		if rp.CaughtUp || containsID(conf.Voters, b) {
			rp.Bytes = size
		}
		mp.NewReplicas = append(mp.NewReplicas, rp)
		mp.BytesToCopy += size
		mp.BytesCopied += rp.Bytes
	}
	mp.Step = moveStepName(conf, mp.Target, n.cfg.NodeID, r.CaughtUp)
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

// moveStepName names the step moveStep takes next from conf towards
// target (reassign.go, in its order).
func moveStepName(conf replica.Conf, target []int32, self int32, caughtUp func(int32) bool) string {
	if conf.Joint() {
		return admin.StepPromoting
	}
	for _, l := range conf.Learners {
		if !containsID(target, l) {
			return admin.StepRemoving
		}
	}
	for _, b := range target {
		if !containsID(conf.Voters, b) && !containsID(conf.Learners, b) {
			return admin.StepAddingLearner
		}
	}
	if len(conf.Learners) > 0 {
		for _, l := range conf.Learners {
			if !caughtUp(l) {
				return admin.StepCatchingUp
			}
		}
		return admin.StepPromoting
	}
	for _, v := range conf.Voters {
		if !containsID(target, v) {
			if v == self {
				return admin.StepHandingOff
			}
			return admin.StepRemoving
		}
	}
	return admin.StepRemoving // the voters are the target: the move is being recorded as ended
}

// peerRebalance asks broker's admin API for the moves it leads.
func (n *Node) peerRebalance(ctx context.Context, broker int32) (admin.RebalanceStatus, error) {
	var out admin.RebalanceStatus
	m, ok := n.agent.LiveBrokers()[broker]
	if !ok || m.AdminAddr == "" {
		return out, fmt.Errorf("leader %d is down or unknown", broker)
	}
	ctx, cancel := context.WithTimeout(ctx, rebalancePeerTimeout)
	defer cancel()
	if err := n.peers.GetJSON(ctx, m.AdminAddr, "/v1/rebalance", url.Values{"local": {"1"}}, maxRebalanceBody, &out); err != nil {
		return out, fmt.Errorf("leader %d: %w", broker, err)
	}
	return out, nil
}
