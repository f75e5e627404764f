package replica

import (
	"context"
	"encoding/binary"
	"time"
)

// ConfirmLeader returns nil once a quorum of the group has acknowledged,
// after the call began, that this replica leads in term epoch (raft's
// ReadIndex, ReadOnlySafe), and ErrNotLeader if it does not or ctx ends
// first. A leader that was paused (SIGSTOP) or cut off still believes it
// leads until it hears of a newer term; state kept in its memory (a
// coordinator's committed offsets) is served only after this check, since
// another leader may have acknowledged newer writes meanwhile. A single
// copy leads while it is alive: nothing to confirm.
func (r *Replica) ConfirmLeader(ctx context.Context, epoch int32) error {
	g := r.rg
	if g == nil {
		if !r.IsLeader() {
			return ErrNotLeader
		}
		return nil
	}
	ch := make(chan struct{}, 1)
	g.mu.Lock()
	if g.closed || g.broken != nil || !g.writable.Load() || int32(g.rn.BasicStatus().GetTerm()) != epoch {
		g.mu.Unlock()
		return ErrNotLeader
	}
	g.readSeq++
	key := string(binary.BigEndian.AppendUint64(nil, g.readSeq))
	if g.reads == nil {
		g.reads = make(map[string]chan struct{})
	}
	g.reads[key] = ch
	g.asleep.Store(false)
	g.rn.ReadIndex([]byte(key))
	g.mu.Unlock()
	g.w.kick(g)
	defer func() {
		g.mu.Lock()
		delete(g.reads, key)
		g.mu.Unlock()
	}()
	// A deposed leader's read is dropped by raft and never answered: stop
	// waiting as soon as this replica knows it no longer leads.
	poll := time.NewTicker(g.d.cfg.Tick)
	defer poll.Stop()
	for {
		select {
		case <-ch:
			if !g.leading.Load() || int32(g.term.Load()) != epoch {
				return ErrNotLeader
			}
			return nil
		case <-poll.C:
			if !g.leading.Load() || int32(g.term.Load()) != epoch {
				return ErrNotLeader
			}
		case <-ctx.Done():
			return ErrNotLeader
		}
	}
}

// answerReads wakes the ConfirmLeader calls whose reads a quorum
// acknowledged. Under mu.
func (g *raftGroup) answerReads(ctxs [][]byte) {
	for _, c := range ctxs {
		if ch, ok := g.reads[string(c)]; ok {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}
