package txn

import (
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/group"
)

// InitProducerID gives txnID its producer id and a new epoch, fencing
// every earlier producer of the id (Kafka's handleInitProducerId). An
// ongoing transaction is aborted first, with the epoch bumped, and the
// client told CONCURRENT_TRANSACTIONS to retry once it is. reqPID/reqEpoch
// (v3+, -1 otherwise) let a producer that knows its id re-initialise
// without fencing itself; any other id or epoch is PRODUCER_FENCED.
func (c *Coordinator) InitProducerID(txnID string, timeout time.Duration, reqPID int64, reqEpoch int16) (int64, int16, int16) {
	if timeout <= 0 || timeout > c.cfg.MaxTimeout {
		return -1, -1, kerr.InvalidTransactionTimeout.Code
	}
	s, code := c.lockShard(txnID)
	if code != 0 {
		return -1, -1, code
	}
	defer s.mu.Unlock()
	m := s.txns[txnID]
	var next *txnMeta
	switch {
	case m == nil:
		pid, err := c.cfg.AllocateID()
		if err != nil {
			c.logger.WithError(err).Error("allocate producer id")
			return -1, -1, kerr.CoordinatorNotAvailable.Code
		}
		next = &txnMeta{id: txnID, pid: pid, epoch: 0, lastEpoch: -1, partitions: map[TopicPartition]struct{}{}}
	case m.state == PrepareCommit || m.state == PrepareAbort:
		c.complete(s, m)
		return -1, -1, kerr.ConcurrentTransactions.Code
	case reqPID >= 0 && (reqPID != m.pid || reqEpoch != m.epoch && (m.lastEpoch < 0 || reqEpoch != m.lastEpoch)):
		return -1, -1, kerr.ProducerFenced.Code
	case m.state == Ongoing:
		if code := c.abortBumped(s, m, false); code != 0 {
			return -1, -1, code
		}
		return -1, -1, kerr.ConcurrentTransactions.Code
	default:
		next = m.clone()
		if next.epoch >= maxEpoch {
			pid, err := c.cfg.AllocateID()
			if err != nil {
				return -1, -1, kerr.CoordinatorNotAvailable.Code
			}
			next.pid, next.epoch = pid, 0
		} else {
			next.epoch++
		}
		next.state = Empty
		next.lastEpoch = -1
		next.partitions = map[TopicPartition]struct{}{}
	}
	next.timeout = timeout
	next.start = time.Time{}
	if code := c.store(s, next); code != 0 {
		return -1, -1, code
	}
	s.txns[txnID] = next
	return next.pid, next.epoch, 0
}

// checkProducer is Kafka's producer id and epoch check of the
// transactional APIs. Called with s.mu held.
func checkProducer(m *txnMeta, pid int64, epoch int16) int16 {
	switch {
	case m == nil || m.pid != pid:
		return kerr.InvalidProducerIDMapping.Code
	case m.epoch != epoch:
		return kerr.ProducerFenced.Code
	}
	return 0
}

// AddPartitions adds partitions to txnID's transaction, making it Ongoing.
// It returns one code for all (the transaction's), or per partition codes
// when some partitions do not exist (the others OPERATION_NOT_ATTEMPTED).
func (c *Coordinator) AddPartitions(txnID string, pid int64, epoch int16, tps []TopicPartition, verifyOnly bool) (int16, map[TopicPartition]int16) {
	bad := map[TopicPartition]int16{}
	for _, tp := range tps {
		n, ok := c.cfg.PartitionCount(tp.Topic)
		if !ok || tp.Partition < 0 || tp.Partition >= n {
			bad[tp] = kerr.UnknownTopicOrPartition.Code
		}
	}
	if len(bad) > 0 {
		for _, tp := range tps {
			if _, ok := bad[tp]; !ok {
				bad[tp] = kerr.OperationNotAttempted.Code
			}
		}
		return 0, bad
	}
	s, code := c.lockShard(txnID)
	if code != 0 {
		return code, nil
	}
	defer s.mu.Unlock()
	m := s.txns[txnID]
	if code := checkProducer(m, pid, epoch); code != 0 {
		return code, nil
	}
	switch m.state {
	case PrepareCommit, PrepareAbort:
		c.complete(s, m)
		return kerr.ConcurrentTransactions.Code, nil
	case Dead:
		return kerr.InvalidTxnState.Code, nil
	}
	if verifyOnly {
		for _, tp := range tps {
			if _, ok := m.partitions[tp]; !ok || m.state != Ongoing {
				bad[tp] = kerr.InvalidTxnState.Code
			}
		}
		return 0, bad
	}
	if m.state == Ongoing {
		all := true
		for _, tp := range tps {
			if _, ok := m.partitions[tp]; !ok {
				all = false
			}
		}
		if all {
			return 0, nil
		}
	}
	next := m.clone()
	if next.state != Ongoing {
		next.state = Ongoing
		next.start = time.Now()
		next.partitions = map[TopicPartition]struct{}{}
	}
	for _, tp := range tps {
		next.partitions[tp] = struct{}{}
	}
	if code := c.store(s, next); code != 0 {
		return code, nil
	}
	s.txns[txnID] = next
	return 0, nil
}

// AddOffsets adds groupID's __consumer_offsets partition to the
// transaction, so that its commit marker makes the transaction's offset
// commits visible.
func (c *Coordinator) AddOffsets(txnID string, pid int64, epoch int16, groupID string) int16 {
	tp := TopicPartition{group.TopicName, group.PartitionFor(groupID, c.cfg.GroupPartitions())}
	code, per := c.AddPartitions(txnID, pid, epoch, []TopicPartition{tp}, false)
	if code == 0 && len(per) > 0 {
		return kerr.CoordinatorNotAvailable.Code // __consumer_offsets missing
	}
	return code
}

// EndTxn commits or aborts txnID's transaction: Prepare is durable before
// it returns; the markers and Complete follow in the background, and done
// closes once they are written (or the attempt gave up, to be retried).
func (c *Coordinator) EndTxn(txnID string, pid int64, epoch int16, commit bool) (code int16, done <-chan struct{}) {
	s, code := c.lockShard(txnID)
	if code != 0 {
		return code, nil
	}
	defer s.mu.Unlock()
	m := s.txns[txnID]
	if code := checkProducer(m, pid, epoch); code != 0 {
		return code, nil
	}
	switch {
	case m.state == Ongoing:
	case m.state == PrepareCommit && commit, m.state == PrepareAbort && !commit:
		c.complete(s, m)
		return kerr.ConcurrentTransactions.Code, nil
	case m.state == CompleteCommit && commit, m.state == CompleteAbort && !commit:
		return 0, nil // a retry of an EndTxn that succeeded
	default:
		return kerr.InvalidTxnState.Code, nil
	}
	next := m.clone()
	next.state = PrepareAbort
	if commit {
		next.state = PrepareCommit
	}
	if code := c.store(s, next); code != 0 {
		return code, nil
	}
	s.txns[txnID] = next
	c.logger.WithFields(logrus.Fields{"transactional_id": txnID, "producer_id": pid, "epoch": epoch, "state": next.state.String(), "partitions": len(next.partitions)}).Debug("ending transaction")
	c.complete(s, next)
	return 0, next.done
}

// Verify says whether pid/epoch's ongoing transaction of txnID holds tp:
// a partition leader asks before it accepts the first transactional batch
// of a transaction (KIP-890 part 1's verification).
func (c *Coordinator) Verify(txnID string, pid int64, epoch int16, tp TopicPartition) int16 {
	code, per := c.AddPartitions(txnID, pid, epoch, []TopicPartition{tp}, true)
	if code != 0 {
		return code
	}
	return per[tp]
}

// Txn describes one transactional id.
type Txn struct {
	ID         string
	ProducerID int64
	Epoch      int16
	State      kmsg.TransactionState
	Timeout    time.Duration
	Start      time.Time
	Partitions []TopicPartition
}

// Describe returns txnID's state, or the error code for it.
func (c *Coordinator) Describe(txnID string) (Txn, int16) {
	s, code := c.lockShard(txnID)
	if code != 0 {
		return Txn{}, code
	}
	defer s.mu.Unlock()
	m := s.txns[txnID]
	if m == nil {
		return Txn{}, kerr.TransactionalIDNotFound.Code
	}
	return describe(m), 0
}

func describe(m *txnMeta) Txn {
	return Txn{ID: m.id, ProducerID: m.pid, Epoch: m.epoch, State: m.state, Timeout: m.timeout, Start: m.start, Partitions: m.sortedPartitions()}
}

// List returns every transactional id of the loaded partitions.
func (c *Coordinator) List() []Txn {
	c.mu.RLock()
	shards := make([]*shard, 0, len(c.shards))
	for _, s := range c.shards {
		shards = append(shards, s)
	}
	c.mu.RUnlock()
	var out []Txn
	for _, s := range shards {
		s.mu.Lock()
		if !s.gone {
			for _, m := range s.txns {
				out = append(out, describe(m))
			}
		}
		s.mu.Unlock()
	}
	return out
}
