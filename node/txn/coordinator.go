package txn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/node/group"
)

// Log is the storage behind __transaction_state, as group.Log is behind
// __consumer_offsets: Append returns once the batch is committed.
type Log interface {
	Append(p int32, batch []byte) error
	Replay(p int32, fn func(batches []byte) error) error
}

// Marker is one transaction marker to write to a partition.
type Marker struct {
	ProducerID       int64
	Epoch            int16
	Commit           bool
	CoordinatorEpoch int32
}

// ErrPartitionGone tells the coordinator a partition of a transaction no
// longer exists (its topic was deleted): there is nothing to mark.
var ErrPartitionGone = errors.New("partition gone")

// ErrCoordinatorFenced tells the coordinator a partition has seen a
// marker of the producer from a newer coordinator (Kafka's
// TRANSACTION_COORDINATOR_FENCED): this one was deposed, and stops.
var ErrCoordinatorFenced = errors.New("transaction coordinator fenced")

// Markers writes markers to the partitions of transactions.
type Markers interface {
	// Write returns once the marker is committed in tp, or an error
	// (retried by the coordinator, except ErrPartitionGone and
	// ErrCoordinatorFenced).
	Write(ctx context.Context, tp TopicPartition, m Marker) error
}

// Config configures a coordinator.
type Config struct {
	Partitions int32 // of __transaction_state
	// MaxTimeout is transaction.max.timeout.ms: longer timeouts are
	// refused with INVALID_TRANSACTION_TIMEOUT.
	MaxTimeout time.Duration
	// AbortInterval is how often timed-out transactions are looked for
	// (transaction.abort.timed.out.transaction.cleanup.interval.ms).
	AbortInterval time.Duration
	// IDExpiration is transactional.id.expiration.ms: an id with no
	// transaction open that has not changed for this long is forgotten
	// (a tombstone in the log), so ids do not pile up forever.
	IDExpiration time.Duration
	// AllocateID hands out a producer id never handed out before.
	AllocateID func() (int64, error)
	// PartitionCount says whether a topic exists and its partition count.
	PartitionCount func(topic string) (int32, bool)
	// GroupPartitions is the partition count of __consumer_offsets.
	GroupPartitions func() int32
	Logger          logrus.FieldLogger
	// Metrics, when set, is told of transactions' ends.
	OnEnd func(state kmsg.TransactionState, timedOut bool)
}

// Coordinator coordinates the transactional ids of the loaded partitions.
type Coordinator struct {
	cfg     Config
	log     Log
	markers Markers
	logger  logrus.FieldLogger

	mu     sync.RWMutex
	shards map[int32]*shard
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type shard struct {
	partition int32
	epoch     int32 // the partition's leader epoch when loaded: markers carry it
	mu        sync.Mutex
	gone      bool
	txns      map[string]*txnMeta
	ctx       context.Context // done when unloaded: stops completions
	cancel    context.CancelFunc
}

// New returns a coordinator that has loaded nothing; Close stops it.
func New(cfg Config, log Log, markers Markers) (*Coordinator, error) {
	if cfg.Partitions <= 0 {
		return nil, fmt.Errorf("transaction coordinator: %s partitions must be positive, got %d", TopicName, cfg.Partitions)
	}
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = 15 * time.Minute
	}
	if cfg.AbortInterval <= 0 {
		cfg.AbortInterval = 10 * time.Second
	}
	if cfg.IDExpiration <= 0 {
		cfg.IDExpiration = 7 * 24 * time.Hour
	}
	if cfg.Logger == nil {
		l := logrus.New()
		l.SetLevel(logrus.WarnLevel)
		cfg.Logger = l
	}
	c := &Coordinator{cfg: cfg, log: log, markers: markers, logger: cfg.Logger, shards: make(map[int32]*shard)}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.wg.Add(1)
	go c.abortLoop()
	return c, nil
}

// Close unloads everything and stops the timeout sweep.
func (c *Coordinator) Close() {
	c.cancel()
	c.mu.RLock()
	var ps []int32
	for p := range c.shards {
		ps = append(ps, p)
	}
	c.mu.RUnlock()
	for _, p := range ps {
		c.Unload(p)
	}
	c.wg.Wait()
}

// Partition is the __transaction_state partition of a transactional id.
func (c *Coordinator) Partition(txnID string) int32 {
	return group.PartitionFor(txnID, c.cfg.Partitions)
}

// Partitions is the partition count of __transaction_state.
func (c *Coordinator) Partitions() int32 { return c.cfg.Partitions }

// Loaded reports whether p is loaded in leader epoch epoch.
func (c *Coordinator) Loaded(p, epoch int32) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := c.shards[p]
	return s != nil && s.epoch == epoch
}

// Load replays partition p, led in epoch, and starts coordinating its
// transactional ids; transactions left in a Prepare state are completed.
// A partition loaded in another epoch is unloaded first.
func (c *Coordinator) Load(p, epoch int32) error {
	if c.Loaded(p, epoch) {
		return nil
	}
	c.Unload(p)
	txns := make(map[string]*txnMeta)
	err := c.log.Replay(p, func(buf []byte) error {
		return walkRecords(buf, func(key, value []byte) error {
			if len(key) < 2 || key[0] != 0 || key[1] != 0 {
				return nil // not a TxnMetadataKey v0
			}
			var k kmsg.TxnMetadataKey
			if err := k.ReadFrom(key); err != nil {
				return fmt.Errorf("transaction key: %w", err)
			}
			if value == nil {
				delete(txns, k.TransactionalID)
				return nil
			}
			var v kmsg.TxnMetadataValue
			if err := v.ReadFrom(value); err != nil {
				return fmt.Errorf("transaction %q: %w", k.TransactionalID, err)
			}
			txns[k.TransactionalID] = metaFrom(k.TransactionalID, &v)
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("load %s-%d: %w", TopicName, p, err)
	}
	s := &shard{partition: p, epoch: epoch, txns: txns}
	s.ctx, s.cancel = context.WithCancel(c.ctx)
	c.mu.Lock()
	if old := c.shards[p]; old != nil {
		c.mu.Unlock()
		s.cancel()
		return nil // loaded concurrently
	}
	c.shards[p] = s
	c.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range txns {
		if m.state == PrepareCommit || m.state == PrepareAbort {
			c.complete(s, m)
		}
	}
	if len(txns) > 0 {
		c.logger.WithFields(logrus.Fields{"partition": p, "epoch": epoch, "transactional_ids": len(txns)}).Info("loaded transactions")
	}
	return nil
}

// LoadedPartitions lists the partitions loaded, in any epoch.
func (c *Coordinator) LoadedPartitions() []int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]int32, 0, len(c.shards))
	for p := range c.shards {
		out = append(out, p)
	}
	return out
}

// Unload stops coordinating partition p.
func (c *Coordinator) Unload(p int32) {
	c.mu.Lock()
	s := c.shards[p]
	delete(c.shards, p)
	c.mu.Unlock()
	if s == nil {
		return
	}
	s.cancel()
	s.mu.Lock()
	s.gone = true
	s.mu.Unlock()
}

// lockShard returns txnID's shard, locked, or NOT_COORDINATOR.
func (c *Coordinator) lockShard(txnID string) (*shard, int16) {
	c.mu.RLock()
	s := c.shards[c.Partition(txnID)]
	c.mu.RUnlock()
	if s == nil {
		return nil, kerr.NotCoordinator.Code
	}
	s.mu.Lock()
	if s.gone {
		s.mu.Unlock()
		return nil, kerr.NotCoordinator.Code
	}
	return s, 0
}

// store writes m (as it will be) to the log; the caller applies it to
// memory only on success. Called with s.mu held.
func (c *Coordinator) store(s *shard, m *txnMeta) int16 {
	m.updated = time.Now()
	batch := encodeBatch(m.key(), m.value(), m.updated.UnixMilli())
	if err := c.log.Append(s.partition, batch); err != nil {
		c.logger.WithError(err).WithFields(logrus.Fields{"transactional_id": m.id, "partition": s.partition}).Warn("store transaction state")
		var ke *kerr.Error
		if errors.As(err, &ke) && (ke == kerr.NotLeaderForPartition || ke == kerr.KafkaStorageError) {
			return kerr.NotCoordinator.Code
		}
		return kerr.CoordinatorNotAvailable.Code
	}
	return 0
}

// complete writes the markers of m's Prepare state in the background and
// then its Complete state. Called with s.mu held.
func (c *Coordinator) complete(s *shard, m *txnMeta) {
	if m.completing {
		return
	}
	m.completing = true
	m.done = make(chan struct{})
	commit := m.state == PrepareCommit
	mk := Marker{ProducerID: m.pid, Epoch: m.epoch, Commit: commit, CoordinatorEpoch: s.epoch}
	parts := m.sortedPartitions()
	id := m.id
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(m.done)
		var wg sync.WaitGroup
		for _, tp := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.writeMarker(s.ctx, tp, mk)
			}()
		}
		wg.Wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		cur := s.txns[id]
		if s.gone || s.ctx.Err() != nil || cur != m {
			return // the next coordinator finishes
		}
		next := m.clone()
		next.completing = false
		next.state = CompleteAbort
		if commit {
			next.state = CompleteCommit
		}
		next.partitions = map[TopicPartition]struct{}{}
		next.start = time.Time{}
		if code := c.store(s, next); code != 0 {
			// Markers are written; the Prepare state stays, and a
			// later load (or the next request here) completes it again.
			m.completing = false
			return
		}
		s.txns[id] = next
		if c.cfg.OnEnd != nil {
			c.cfg.OnEnd(next.state, false)
		}
	}()
}

// writeMarker retries until the marker is written, the partition is gone
// or ctx ends (the shard unloaded: the next coordinator writes it).
func (c *Coordinator) writeMarker(ctx context.Context, tp TopicPartition, mk Marker) {
	backoff := 50 * time.Millisecond
	for {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := c.markers.Write(wctx, tp, mk)
		cancel()
		if errors.Is(err, ErrCoordinatorFenced) {
			c.logger.WithError(err).WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "producer_id": mk.ProducerID}).Info("transaction marker fenced by a newer coordinator")
			return
		}
		if err == nil || errors.Is(err, ErrPartitionGone) || ctx.Err() != nil {
			return
		}
		c.logger.WithError(err).WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "producer_id": mk.ProducerID}).Debug("write transaction marker; retrying")
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// abortLoop aborts transactions past their timeout.
func (c *Coordinator) abortLoop() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.AbortInterval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		c.mu.RLock()
		shards := make([]*shard, 0, len(c.shards))
		for _, s := range c.shards {
			shards = append(shards, s)
		}
		c.mu.RUnlock()
		now := time.Now()
		for _, s := range shards {
			s.mu.Lock()
			if !s.gone {
				for _, m := range s.txns {
					switch {
					case m.state == Ongoing && now.Sub(m.start) > m.timeout:
						c.logger.WithFields(logrus.Fields{"transactional_id": m.id, "producer_id": m.pid, "epoch": m.epoch}).Info("aborting timed-out transaction")
						if c.abortBumped(s, m, true) == 0 && c.cfg.OnEnd != nil {
							c.cfg.OnEnd(CompleteAbort, true)
						}
					case (m.state == Empty || m.state == CompleteCommit || m.state == CompleteAbort) && now.Sub(m.updated) > c.cfg.IDExpiration:
						c.expire(s, m)
					}
				}
			}
			s.mu.Unlock()
		}
	}
}

// expire forgets m's transactional id, durably first. Called with s.mu
// held.
func (c *Coordinator) expire(s *shard, m *txnMeta) {
	if err := c.log.Append(s.partition, encodeBatch(m.key(), nil, time.Now().UnixMilli())); err != nil {
		c.logger.WithError(err).WithField("transactional_id", m.id).Warn("expire transactional id")
		return
	}
	delete(s.txns, m.id)
	c.logger.WithFields(logrus.Fields{"transactional_id": m.id, "producer_id": m.pid}).Info("transactional id expired")
}

// abortBumped aborts m's ongoing transaction with the producer's epoch
// bumped, fencing the producer that left it. Called with s.mu held.
func (c *Coordinator) abortBumped(s *shard, m *txnMeta, timedOut bool) int16 {
	next := m.clone()
	if next.epoch < maxEpoch {
		next.epoch++
	}
	next.lastEpoch = -1
	if timedOut {
		next.lastEpoch = m.epoch
	}
	next.state = PrepareAbort
	if code := c.store(s, next); code != 0 {
		return code
	}
	s.txns[m.id] = next
	c.complete(s, next)
	return 0
}

// maxEpoch: past it a producer gets a new id (Kafka's Short.MaxValue - 1,
// keeping one epoch for fencing).
const maxEpoch = 32766

// encodeBatch builds one uncompressed batch of one record.
func encodeBatch(key, value []byte, ts int64) []byte {
	h := recordbatch.NoProducer()
	h.PartitionLeaderEpoch = 0
	h.FirstTimestamp, h.MaxTimestamp = ts, ts
	b, err := recordbatch.Build(nil, h, []recordbatch.Record{{Key: key, Value: value}}, nil)
	if err != nil {
		panic(err) // uncompressed: cannot fail
	}
	return b
}

// walkRecords calls fn for every record of every data batch in buf.
func walkRecords(buf []byte, fn func(key, value []byte) error) error {
	var recs []recordbatch.Record
	return recordbatch.Walk(buf, func(batch []byte, h recordbatch.Header) error {
		if h.Control() {
			return nil
		}
		if h.Compression() != recordbatch.CompressionNone {
			return fmt.Errorf("compressed batch at offset %d, which the coordinator never writes", h.BaseOffset)
		}
		var err error
		if recs, err = recordbatch.ParseRecords(recs[:0], batch[recordbatch.HeaderSize:], h.NumRecords, h.LastOffsetDelta); err != nil {
			return fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
		}
		for _, r := range recs {
			if err := fn(r.Key, r.Value); err != nil {
				return err
			}
		}
		return nil
	})
}
