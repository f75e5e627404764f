package replica

// A leader's proposals: a batch is validated and queued (enqueue), the
// group's next round proposes it (proposeQueued) and matches it to the
// entry it became (match, in raft.go), and its appended and done channels
// tell the proposer. Commands (DeleteRecords) are proposed under the
// group's mu, between rounds, and applied by every replica.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/internal/stages"
	"github.com/spool-log/spool/node/replica/raftlog"
	"github.com/spool-log/spool/partition"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// proposal is one batch proposed by the leader, matched to the entry it
// became (FIFO within the term: raft appends a leader's proposals in
// order, and only the term's leader makes entries of that term).
type proposal struct {
	term      uint64
	index     uint64
	info      partition.AppendInfo
	appended  chan struct{} // closed once the leader's log holds it, or on failure (appendErr set)
	done      chan struct{} // closed once committed, or on failure (err set)
	appendErr error         // set before appended closes
	data      []byte        // the entry, until the round proposes it
	err       error         // set before done closes
	// When stages.On: when it was proposed, appended here, committed.
	proposed, appendedAt, doneAt time.Time
}

// fail ends what of the proposal is still open with err: each error is
// written only before its channel closes, as readers read it after (a
// proposal appended, then failed, keeps its nil appendErr).
func (p *proposal) fail(err error) {
	select {
	case <-p.appended:
	default:
		p.appendErr = err
		close(p.appended)
	}
	select {
	case <-p.done:
	default:
		p.err = err
		close(p.done)
	}
}

// propose proposes one validated batch and returns once the leader's log
// holds it (or it failed).
func (g *raftGroup) propose(batches []byte) (*proposal, error) {
	p, err := g.enqueue(batches)
	if err != nil {
		return nil, err
	}
	return p, p.waitAppended()
}

// waitAppended returns once the leader's log holds the proposal, or it
// failed. Not bounded by a context: the append is this replica's own next
// round, and an idempotent producer's state must learn the offset of every
// batch that lands, or a retry of it would be appended again. Leadership
// moving, the group breaking or closing ends the wait.
func (p *proposal) waitAppended() error {
	<-p.appended
	return p.appendErr
}

// enqueue validates one batch and hands it to raft, which fixes its place
// in the log's order; it returns without waiting for the round that
// appends it (waitAppended).
func (g *raftGroup) enqueue(batches []byte) (*proposal, error) {
	h, err := partition.ParseBatchHeader(batches)
	if err != nil {
		return nil, &partition.BatchError{Kind: partition.Corrupt, Reason: err.Error()}
	}
	if h.Size() != int64(len(batches)) {
		return nil, &partition.BatchError{Kind: partition.Invalid, Reason: "a replicated append takes exactly one record batch"}
	}
	if len(batches) > g.d.cfg.MaxEntryBytes {
		return nil, fmt.Errorf("%d bytes: %w", len(batches), ErrTooLarge)
	}
	if err := partition.ValidateBatches(batches); err != nil {
		return nil, err
	}
	p := &proposal{appended: make(chan struct{}), done: make(chan struct{}),
		info: partition.AppendInfo{LogAppendTime: -1, RecordCount: int(h.NumRecords), Bytes: len(batches)}}
	// raft keeps the data (unstable log, messages) past the caller's
	// buffer, which wire reuses. The base offset, which the log stamps on
	// append, is zeroed: an entry starting 0xFF is a command (raftlog).
	data := bytes.Clone(batches)
	binary.BigEndian.PutUint64(data, 0)
	// The leader stamps the timestamp type once, as the single-copy log
	// does on append; followers store its bytes as they are.
	cfg := g.r.log.Config()
	p.info.LogAppendTime = stampTimestampType(data, h, cfg.LogAppendTime, cfg.Clock().UnixMilli())
	p.data = data
	if !g.writable.Load() {
		return nil, ErrNotLeader
	}
	if stages.On {
		p.proposed = time.Now()
	}
	g.inMu.Lock()
	if err := g.stopped; err != nil {
		g.inMu.Unlock()
		return nil, err
	}
	g.proposals = append(g.proposals, p)
	g.inMu.Unlock()
	g.asleep.Store(false)
	g.w.kick(g)
	return p, nil
}

// proposeQueued proposes, in the round, the batches enqueued since the last
// one, in their order. Called with mu held. One that raft drops (this
// replica no longer leads) or that finds the group not writable fails
// with ErrNotLeader.
func (g *raftGroup) proposeQueued(props []*proposal) {
	if len(props) == 0 {
		return
	}
	g.asleep.Store(false) // under mu: no round quiesces it meanwhile
	// Writable as of now, not as the last round published it: this
	// round's messages may have made another replica leader, and a
	// proposal of the new term would be matched with whatever entry of
	// that term the new leader sends (raft does not forward proposals
	// here: DisableProposalForwarding).
	bs := g.rn.BasicStatus()
	term := bs.GetTerm()
	writable := bs.RaftState == raft.StateLeader && g.termStartTerm == term && g.termStart > 0 && g.applied >= g.termStart
	for _, p := range props {
		if !writable {
			p.fail(ErrNotLeader)
			continue
		}
		p.term = term
		data := p.data
		p.data = nil
		if err := g.rn.Propose(data); err != nil {
			if errors.Is(err, raft.ErrProposalDropped) {
				err = ErrNotLeader
			} else {
				err = fmt.Errorf("propose to %s: %w", g.key, err)
			}
			p.fail(err)
			continue
		}
		g.pending = append(g.pending, p)
	}
}

// stopProposals refuses proposals from now on with err and returns those
// enqueued and not yet proposed, for the caller to fail.
func (g *raftGroup) stopProposals(err error) []*proposal {
	g.inMu.Lock()
	defer g.inMu.Unlock()
	if g.stopped == nil {
		g.stopped = err
	}
	props := g.proposals
	g.proposals = nil
	return props
}

// command applies a command entry, committed, to this replica's log.
func (g *raftGroup) command(e *pb.Entry) error {
	if payload, ok := raftlog.RemotePayload(e); ok {
		if g.r.remote == nil {
			// Not tiered here (the node has no store): the record is
			// still the group's, but this replica keeps every segment,
			// which is safe, only larger.
			return nil
		}
		if err := g.r.remote.ApplyRemote(payload); err != nil {
			return fmt.Errorf("entry %d: remote record: %w", e.GetIndex(), err)
		}
		return nil
	}
	offset, ok := raftlog.DeleteRecordsOffset(e)
	if !ok {
		return fmt.Errorf("entry %d: a command this node does not know", e.GetIndex())
	}
	defer g.trimConfs()
	if err := g.st.DeleteBeforeAt(offset, g.confAt); err != nil {
		return fmt.Errorf("entry %d: %w", e.GetIndex(), err)
	}
	return nil
}

// proposeCommand proposes a command entry and waits until this replica
// applied it, or ctx ends (ErrOutcomeUnknown: it may still apply).
func (g *raftGroup) proposeCommand(ctx context.Context, data []byte) error {
	p := &proposal{appended: make(chan struct{}), done: make(chan struct{})}
	g.mu.Lock()
	switch {
	case g.closed:
		g.mu.Unlock()
		return partition.ErrClosed
	case !g.writable.Load() || g.broken != nil:
		g.mu.Unlock()
		return ErrNotLeader
	}
	p.term = g.rn.BasicStatus().GetTerm()
	g.asleep.Store(false)
	if err := g.rn.Propose(data); err != nil {
		g.mu.Unlock()
		if errors.Is(err, raft.ErrProposalDropped) {
			return ErrNotLeader
		}
		return fmt.Errorf("propose to %s: %w", g.key, err)
	}
	g.pending = append(g.pending, p)
	g.mu.Unlock()
	g.w.kick(g)
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrOutcomeUnknown, ctx.Err())
	}
}

// stampTimestampType gives batch the topic's timestamp type: under
// LogAppendTime the attribute and maxTimestamp set to now (returned);
// otherwise a LogAppendTime attribute a producer may not choose cleared
// (-1 returned). The CRC is recomputed where a covered field changed.
func stampTimestampType(batch []byte, h partition.BatchHeader, logAppendTime bool, now int64) int64 {
	switch {
	case logAppendTime:
		attrs := uint16(h.Attributes) | recordbatch.AttrTimestampType
		binary.BigEndian.PutUint16(batch[recordbatch.OffAttributes:], attrs)
		binary.BigEndian.PutUint64(batch[recordbatch.OffMaxTimestamp:], uint64(now))
		recordbatch.SetCRC(batch)
		return now
	case h.LogAppendTime():
		attrs := uint16(h.Attributes) &^ recordbatch.AttrTimestampType
		binary.BigEndian.PutUint16(batch[recordbatch.OffAttributes:], attrs)
		recordbatch.SetCRC(batch)
	}
	return -1
}
