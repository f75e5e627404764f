package group

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/recordbatch"
)

// Transactional offset commits (TxnOffsetCommit), as Kafka stores them:
// the offset records are written to the group's partition in a
// transactional batch of the committing producer, and become the group's
// committed offsets only when the transaction's commit marker reaches that
// partition (an abort marker drops them). Until then they are pending,
// per producer id, in memory and in the log, so a coordinator that
// replays the partition finds them pending, or applied, as the markers in
// the log say.

// pendingTxn is one producer's uncommitted offset records.
type pendingTxn struct {
	epoch int16
	recs  []record
}

// fencedTxn says whether a transactional commit of pid at epoch comes
// from a fenced producer: a newer epoch already wrote here, or ended a
// transaction here. A newer epoch than the pending one's drops those
// records: the older epoch's transaction was ended or fenced at the
// coordinator. Called with s.mu held.
func (s *shard) fencedTxn(pid int64, epoch int16) bool {
	if e, ok := s.markerEpoch[pid]; ok && epoch < e {
		return true
	}
	if pt := s.pendingTxn[pid]; pt != nil {
		if epoch < pt.epoch {
			return true
		}
		if epoch > pt.epoch {
			delete(s.pendingTxn, pid)
		}
	}
	return false
}

// TxnOffsetCommit stores offsets of producer pid's transaction; they are
// visible to OffsetFetch only after the commit marker (CompleteTxn).
// A generation < 0 skips the member check (clients before KIP-447).
func (c *Coordinator) TxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	setAll := func(code int16) *kmsg.TxnOffsetCommitResponse {
		resp.Topics = nil
		for _, t := range req.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	setAll(0)
	s, w, code := c.lockWriter(req.Group)
	if code != 0 {
		return setAll(code)
	}
	defer func() {
		s.releaseWriter(req.Group, w)
		s.mu.Unlock()
	}()
	g := s.groups[req.Group]
	if req.Generation >= 0 && req.Version >= 3 {
		switch {
		case g == nil:
			return setAll(kerr.IllegalGeneration.Code)
		case g.consumer != nil:
			if code := g.checkConsumerMember(req.MemberID, req.Generation, true); code != 0 {
				return setAll(code)
			}
		case g.isStaticMemberFenced(req.InstanceID, req.MemberID):
			return setAll(kerr.FencedInstanceID.Code)
		case g.members[req.MemberID] == nil:
			return setAll(kerr.UnknownMemberID.Code)
		case req.Generation != g.generation:
			return setAll(kerr.IllegalGeneration.Code)
		}
	}
	if s.fencedTxn(req.ProducerID, req.ProducerEpoch) {
		if req.Version >= 3 {
			return setAll(kerr.ProducerFenced.Code)
		}
		return setAll(kerr.InvalidProducerEpoch.Code)
	}
	now := c.clock.Now().UnixMilli()
	var recs []record
	for ti, t := range req.Topics {
		nparts, known := int32(0), true
		if c.cfg.PartitionCount != nil {
			nparts, known = c.cfg.PartitionCount(t.Topic)
		}
		for pi, p := range t.Partitions {
			switch {
			case !known || c.cfg.PartitionCount != nil && (p.Partition < 0 || p.Partition >= nparts):
				resp.Topics[ti].Partitions[pi].ErrorCode = kerr.UnknownTopicOrPartition.Code
				continue
			case p.Metadata != nil && c.cfg.MaxMetadataBytes > 0 && len(*p.Metadata) > c.cfg.MaxMetadataBytes:
				resp.Topics[ti].Partitions[pi].ErrorCode = kerr.OffsetMetadataTooLarge.Code
				continue
			}
			cm := commit{offset: p.Offset, leaderEpoch: p.LeaderEpoch, timestamp: now}
			if p.Metadata != nil {
				cm.metadata = *p.Metadata
			}
			recs = append(recs, record{key: offsetCommitKey(req.Group, t.Topic, p.Partition), value: offsetCommitValue(cm)})
		}
	}
	if len(recs) == 0 {
		return resp
	}
	batch := encodeTxnBatch(recs, now, req.ProducerID, req.ProducerEpoch)
	s.mu.Unlock()
	err := c.log.Append(s.partition, batch)
	s.mu.Lock()
	if err != nil {
		c.logger.WithError(err).WithField("group", req.Group).Warn("store transactional offset commit")
		return setAll(appendErrorCode(err))
	}
	if s.gone {
		return resp
	}
	s.addPending(req.ProducerID, req.ProducerEpoch, recs)
	return resp
}

// hasPending says whether a transaction's commit for the group's
// partition awaits its marker. Called with s.mu held.
func (s *shard) hasPending(groupID, topic string, partition int32) bool {
	for _, pt := range s.pendingTxn {
		for _, r := range pt.recs {
			var k kmsg.OffsetCommitKey
			if k.ReadFrom(r.key) == nil && k.Group == groupID && k.Topic == topic && k.Partition == partition {
				return true
			}
		}
	}
	return false
}

// addPending notes pid's transactional records. Called with s.mu held.
func (s *shard) addPending(pid int64, epoch int16, recs []record) {
	if s.pendingTxn == nil {
		s.pendingTxn = make(map[int64]*pendingTxn)
	}
	pt := s.pendingTxn[pid]
	if pt == nil || pt.epoch < epoch {
		pt = &pendingTxn{epoch: epoch}
		s.pendingTxn[pid] = pt
	}
	for _, r := range recs {
		r.seq = s.nextSeq()
		pt.recs = append(pt.recs, r)
	}
}

// endPending takes pid's pending records at a marker of epoch, returning
// those a commit applies. Called with s.mu held.
func (s *shard) endPending(pid int64, epoch int16, committed bool) []record {
	if s.markerEpoch == nil {
		s.markerEpoch = make(map[int64]int16)
	}
	if e, ok := s.markerEpoch[pid]; !ok || epoch > e {
		s.markerEpoch[pid] = epoch
	}
	pt := s.pendingTxn[pid]
	delete(s.pendingTxn, pid)
	if pt == nil || !committed || pt.epoch > epoch {
		return nil
	}
	return pt.recs
}

// CompleteTxn applies (commit) or drops (abort) producer pid's pending
// offsets in partition p, once its marker (of epoch) is committed there.
func (c *Coordinator) CompleteTxn(p int32, pid int64, epoch int16, committed bool) {
	c.mu.RLock()
	s := c.shards[p]
	c.mu.RUnlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return
	}
	if s.loading {
		// The replay may have read the log before this marker: Load
		// applies it once the replay is done (a second application
		// finds nothing pending).
		s.lateMarkers = append(s.lateMarkers, lateMarker{pid, epoch, committed})
		return
	}
	c.applyMarker(s, pid, epoch, committed)
}

// lateMarker is a marker committed while its partition was loading.
type lateMarker struct {
	pid       int64
	epoch     int16
	committed bool
}

// applyMarker applies a marker to memory. Called with s.mu held.
func (c *Coordinator) applyMarker(s *shard, pid int64, epoch int16, committed bool) {
	for _, r := range s.endPending(pid, epoch, committed) {
		var k kmsg.OffsetCommitKey
		var v kmsg.OffsetCommitValue
		if k.ReadFrom(r.key) != nil || v.ReadFrom(r.value) != nil {
			continue // built here: cannot happen
		}
		g := s.groups[k.Group]
		if g == nil {
			g = c.newGroup(s, k.Group)
			s.groups[k.Group] = g
		}
		setCommitIfNewer(g, k.Topic, k.Partition, commit{offset: v.Offset, leaderEpoch: v.LeaderEpoch, metadata: v.Metadata, timestamp: v.CommitTimestamp, seq: r.seq})
	}
}

// encodeTxnBatch is encodeBatch as producer pid's transactional batch.
func encodeTxnBatch(recs []record, ts int64, pid int64, epoch int16) []byte {
	h := recordbatch.NoProducer()
	h.PartitionLeaderEpoch = 0
	h.ProducerID, h.ProducerEpoch = pid, epoch
	h.Attributes = recordbatch.AttrTransactional
	h.LastOffsetDelta = int32(len(recs) - 1)
	h.FirstTimestamp, h.MaxTimestamp = ts, ts
	rs := make([]recordbatch.Record, len(recs))
	for i, r := range recs {
		rs[i] = recordbatch.Record{OffsetDelta: int64(i), Key: r.key, Value: r.value}
	}
	b, err := recordbatch.Build(nil, h, rs, nil)
	if err != nil {
		panic(err) // uncompressed: cannot fail
	}
	return b
}

// replayTxn walks batches for replay: plain records go to fn at once;
// a transactional batch's records wait in pending until its producer's
// marker, which hands them to fn (commit) or drops them (abort).
func replayTxn(buf []byte, s *shard, fn func(r record) error) error {
	var recs []recordbatch.Record
	return recordbatch.Walk(buf, func(batch []byte, h recordbatch.Header) error {
		if h.Compression() != recordbatch.CompressionNone {
			return fmt.Errorf("record batch compressed with codec %d, which the coordinator never writes", h.Compression())
		}
		var err error
		if recs, err = recordbatch.ParseRecords(recs[:0], batch[recordbatch.HeaderSize:], h.NumRecords, h.LastOffsetDelta); err != nil {
			return fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
		}
		if h.Control() {
			committed := len(recs) > 0 && len(recs[0].Key) >= 4 && recs[0].Key[3] == 1
			for _, r := range s.endPending(h.ProducerID, h.ProducerEpoch, committed) {
				if err := fn(r); err != nil {
					return err
				}
			}
			return nil
		}
		if h.Transactional() {
			if s.fencedTxn(h.ProducerID, h.ProducerEpoch) {
				return nil // refused when written too
			}
			own := make([]record, 0, len(recs))
			for _, r := range recs {
				own = append(own, record{key: clone(r.Key), value: clone(r.Value)})
			}
			s.addPending(h.ProducerID, h.ProducerEpoch, own)
			return nil
		}
		for _, r := range recs {
			if err := fn(record{key: r.Key, value: r.Value}); err != nil {
				return err
			}
		}
		return nil
	})
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}
