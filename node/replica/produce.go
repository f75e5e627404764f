package replica

import (
	"context"
	"fmt"

	"github.com/spool-log/spool/internal/stages"
	"github.com/spool-log/spool/partition"
)

// Acks is a producer's acks setting.
type Acks int16

const (
	AcksNone   Acks = 0  // no answer: the append is still made as for AcksLeader
	AcksLeader Acks = 1  // answered once the leader's log holds the batch
	AcksAll    Acks = -1 // answered once the batch is committed (below the high watermark)
)

// Append writes batches (RecordBatch v2, validated by the log, which
// rewrites their base offset and stamps the replica's leader epoch in
// place) to the leader's log and returns the offsets given. It is what
// acks=1 waits for; acks=all also waits with WaitCommitted. A replica that
// does not lead refuses with ErrNotLeader. Errors are the log's
// (*partition.BatchError, partition.ErrClosed, ...).
func (r *Replica) Append(batches []byte) (partition.AppendInfo, error) {
	info, _, err := r.Propose(batches)
	return info, err
}

// Commit is an appended batch's commit, to wait on for acks=all.
type Commit struct {
	r    *Replica
	p    *proposal // with Raft
	last int64
}

// Wait returns once the batch is committed, when ctx ends (its error), or
// when it can no longer be known to commit here: ErrOutcomeUnknown (its
// entry was overwritten by another leader's), partition.ErrClosed.
func (c Commit) Wait(ctx context.Context) error {
	if c.p == nil {
		return c.r.WaitCommitted(ctx, c.last)
	}
	select {
	case <-c.p.done:
		if stages.On && !c.p.doneAt.IsZero() {
			stages.Since("L5 handler: committed to awake", c.p.doneAt)
			stages.Since("L0 handler: proposed to awake after commit", c.p.proposed)
		}
		return c.p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Pending is a batch whose place in the leader's log is fixed (no batch
// enqueued after it can land before it) but which the log may not hold
// yet: Appended waits for that. It lets a caller that must order batches
// (an idempotent producer's sequence check) hold its lock only while the
// order is decided, not through the leader's disk round.
type Pending struct {
	r    *Replica
	p    *proposal // with Raft; nil: appended already (info, err)
	info partition.AppendInfo
	err  error
}

// Enqueue is the first half of Propose: the batch is validated and takes
// its place in the log's order. With Raft that is the proposal to the
// leader's group, without waiting for its round; a single-copy replica
// appends here (its log's write is the order).
func (r *Replica) Enqueue(batches []byte) (*Pending, error) {
	if r.rg != nil {
		p, err := r.rg.enqueue(batches)
		if err != nil {
			return nil, err
		}
		return &Pending{r: r, p: p}, nil
	}
	info, err := r.appendDirect(batches)
	if err != nil {
		return nil, err
	}
	return &Pending{r: r, info: info}, nil
}

// Appended is the second half of Propose: it returns once the leader's log
// holds the batch, with the offsets it got there, and its Commit. It may be
// called more than once, from any goroutine.
func (pd *Pending) Appended() (partition.AppendInfo, Commit, error) {
	if pd.p == nil {
		return pd.info, Commit{r: pd.r, last: pd.info.LastOffset}, pd.err
	}
	if err := pd.p.waitAppended(); err != nil {
		return partition.AppendInfo{}, Commit{}, err
	}
	return pd.p.info, Commit{r: pd.r, p: pd.p}, nil
}

// Propose is Append returning the batch's Commit too. With Raft the
// leader validates the batch and proposes it; it returns once the
// leader's own log holds it, with the offsets it got there; that wait is
// not abandoned half way (see raftGroup.propose).
func (r *Replica) Propose(batches []byte) (partition.AppendInfo, Commit, error) {
	if r.rg != nil {
		p, err := r.rg.propose(batches)
		if err != nil {
			return partition.AppendInfo{}, Commit{}, err
		}
		return p.info, Commit{r: r, p: p}, nil
	}
	info, err := r.appendDirect(batches)
	return info, Commit{r: r, last: info.LastOffset}, err
}

func (r *Replica) appendDirect(batches []byte) (partition.AppendInfo, error) {
	if !r.IsLeader() {
		return partition.AppendInfo{}, ErrNotLeader
	}
	info, err := r.log.Append(batches, r.epoch)
	if err != nil {
		return info, err
	}
	// Single copy: the log holding it (fsynced as the flush policy says)
	// is the commit.
	r.advance(info.LastOffset + 1)
	return info, nil
}

// Produce is Append followed, for AcksAll, by WaitCommitted on the batch.
func (r *Replica) Produce(ctx context.Context, batches []byte, acks Acks) (partition.AppendInfo, error) {
	info, c, err := r.Propose(batches)
	if err != nil || acks != AcksAll {
		return info, err
	}
	if err := c.Wait(ctx); err != nil {
		return info, fmt.Errorf("wait for commit of offset %d: %w", info.LastOffset, err)
	}
	return info, nil
}

// WaitCommitted returns once offset is committed (below the high
// watermark), when ctx ends (its error), or when the replica closes
// (partition.ErrClosed). With Raft an offset says nothing of which batch
// is committed there: wait on the Commit Propose gave instead.
func (r *Replica) WaitCommitted(ctx context.Context, offset int64) error {
	for {
		r.mu.Lock()
		ch, closed := r.committed, r.closed
		r.mu.Unlock()
		if r.hw.Load() > offset {
			return nil
		}
		if closed {
			return partition.ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// HighWatermark is the commit point: the offset after the last committed
// record. Consumers read only below it.
func (r *Replica) HighWatermark() int64 { return r.hw.Load() }

// advance moves the high watermark up to hw (never down: concurrent
// appends finish in any order, and the log has every batch below the
// highest one's end), then wakes commit waiters and long polls.
func (r *Replica) advance(hw int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if hw <= r.hw.Load() {
		return
	}
	r.hw.Store(hw)
	close(r.committed)
	r.committed = make(chan struct{})
	r.notifyLocked()
}
