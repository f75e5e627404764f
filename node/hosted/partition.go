package hosted

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/topicconfig"
	"github.com/spool-log/spool/partition"
)

// Partition is a partition whose log lives on this node: its replica, its
// topic settings, and what it keeps beside its log (the producer state
// behind its append lock, the transaction index).
type Partition struct {
	Topic   string
	TopicID membership.TopicID
	Index   int32
	Dir     string
	// Replica is the only way to the partition's log: appends, reads up
	// to the high watermark, leadership, long-poll wake-ups, maintenance.
	Replica *replica.Replica
	// Settings are the topic settings the partition opened with;
	// LiveSettings, once set, replaces them (CurrentSettings).
	Settings     topicconfig.Settings
	LiveSettings atomic.Pointer[topicconfig.Settings]

	// appendMu makes the idempotence check and the batch's place in the
	// log's order one step, so two batches of one producer cannot both
	// pass the sequence check. It is held while the batch is enqueued
	// (replica.Enqueue), never while the leader's round appends it: the
	// producer state is the committed log plus this leader's proposals,
	// those not yet appended recorded as pending.
	appendMu  sync.Mutex
	producers *Producers
	// producersEpoch is the leader epoch producers was rebuilt for: a
	// replica that starts leading in another epoch rebuilds it from the
	// committed log first (an earlier leader's appends are not in it).
	producersEpoch int32
	// Txns is the read_committed view of the log; its own locks.
	Txns TxnIndex

	// Counted per append; the node's metrics flush hands the growth since
	// its last flush (the flushed marks, its own) to go-metrics.
	ProducedBytes, ProducedRecords atomic.Int64
	FlushedBytes, FlushedRecords   int64
	// FetchedBytes counts the record bytes consumers fetched from it as
	// leader, while the console samples (the console's consume rate:
	// node/console.go).
	FetchedBytes atomic.Int64

	log logrus.FieldLogger
}

// NewPartition is the hosted partition of topic (incarnation id) index,
// kept in dir, over rep, opened with settings. Its producer state is
// rebuilt from the committed log's tail; if that fails the data is fine,
// only duplicate detection across the restart is lost, as with an expired
// producer (logged to log).
func NewPartition(topic string, id membership.TopicID, index int32, dir string, rep *replica.Replica, settings topicconfig.Settings, log logrus.FieldLogger) *Partition {
	p := &Partition{
		Topic:     topic,
		TopicID:   id,
		Index:     index,
		Dir:       dir,
		Replica:   rep,
		Settings:  settings,
		producers: NewProducers(),
		log:       log,
	}
	p.producersEpoch, _ = rep.WritableEpoch()
	if err := p.rebuildProducers(time.Now()); err != nil {
		p.log.WithError(err).WithField("topic", topic).WithField("partition", index).Warn("rebuilding producer state failed")
		p.producers = NewProducers()
	}
	return p
}

// CurrentSettings is the partition's topic settings: as opened, or as
// last altered.
func (p *Partition) CurrentSettings() topicconfig.Settings {
	if s := p.LiveSettings.Load(); s != nil {
		return *s
	}
	return p.Settings
}

// rebuildProducers replays the committed log's tail into the producer
// state (Producers.Rebuild). The caller holds appendMu, or has the
// partition to itself (NewPartition).
func (p *Partition) rebuildProducers(now time.Time) error {
	if err := p.producers.RebuildIn(p.Replica, p.Dir, now); err != nil {
		return fmt.Errorf("%s: %w", p.Dir, err)
	}
	return nil
}

// Stable returns the partition's last stable offset, scanning what the
// index has not seen yet (or, while another request scans, as far as that
// scan has come).
func (p *Partition) Stable() (int64, error) {
	hw, start := p.Replica.HighWatermark(), p.Replica.LogStartOffset()
	if err := p.Txns.Refresh(p.Replica, p.Dir); err != nil {
		return 0, err
	}
	return p.Txns.StableOffset(hw, start), nil
}

// producersFor makes the producer state current for the epoch this
// replica leads in, rebuilding it from the committed log when that epoch
// is new: after a leader change the batches an earlier leader appended
// are known only from the log, and a retry of one must be recognised, not
// appended twice. The caller holds appendMu.
func (p *Partition) producersFor() *kerr.Error {
	epoch, ok := p.Replica.WritableEpoch()
	if !ok {
		return kerr.NotLeaderForPartition
	}
	if epoch == p.producersEpoch {
		return nil
	}
	p.producers = NewProducers()
	if err := p.rebuildProducers(time.Now()); err != nil {
		p.log.WithError(err).WithField("topic", p.Topic).WithField("partition", p.Index).Warn("rebuilding producer state failed")
		p.producers = NewProducers()
	}
	p.producersEpoch = epoch
	return nil
}

// Refused is why an idempotent batch was not enqueued: the Kafka error to
// answer with, and a message ("" for none).
type Refused struct {
	Err *kerr.Error
	Msg string
}

func (r *Refused) Error() string {
	if r.Msg == "" {
		return r.Err.Error()
	}
	return r.Err.Error() + ": " + r.Msg
}

// Duplicate is an idempotent batch the producer state already holds: at
// Offset in the log, or, if Pending is set, still on its way into the
// leader's log (its offset is known once Pending is appended). Epoch is
// the leader epoch the duplicate was found in.
type Duplicate struct {
	Offset  int64
	Pending *replica.Pending
	Epoch   int32
}

// Enqueued is what EnqueueIdempotent did with a batch: Dup if the batch is
// a duplicate (nothing enqueued), else Pending, the batch on its way into
// the log, enqueued at Start.
type Enqueued struct {
	Dup     *Duplicate
	Pending *replica.Pending
	Start   time.Time
}

// EnqueueIdempotent checks an idempotent producer's batch (header h, bytes
// batch) against the producer state and places it in the log's order
// (replica.Enqueue) as one step, under the append lock; the leader's round
// that writes it is waited for outside, so the partition's other
// producers, DescribeProducers and the retention loop do not queue behind
// its disk. A transactional batch is refused if a marker of its producer
// came since its transaction was verified (markers: the count then). The
// error is a *Refused, or the Enqueue's. Once the returned Pending is
// appended (or failed), SettleProducer records what became of it.
func (p *Partition) EnqueueIdempotent(h partition.BatchHeader, batch []byte, markers uint64) (Enqueued, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if e := p.producersFor(); e != nil {
		return Enqueued{}, &Refused{Err: e}
	}
	if h.Transactional() {
		if _, m := p.producers.TxnView(h.ProducerID, h.ProducerEpoch); m != markers {
			// The transaction ended (a marker) since it was
			// verified: this batch belongs to none.
			return Enqueued{}, &Refused{Err: kerr.InvalidTxnState, Msg: "the transaction ended"}
		}
	}
	dupOffset, dupPending, dup, seqErr := p.producers.Check(h)
	if seqErr != nil || dup {
		epoch := p.Replica.LeaderEpoch()
		if seqErr != nil {
			return Enqueued{}, &Refused{Err: seqErr}
		}
		return Enqueued{Dup: &Duplicate{Offset: dupOffset, Pending: dupPending, Epoch: epoch}}, nil
	}
	start := time.Now()
	pending, err := p.Replica.Enqueue(batch)
	if err != nil {
		return Enqueued{Start: start}, err
	}
	p.producers.RecordPending(h, pending, start)
	return Enqueued{Pending: pending, Start: start}, nil
}

// SettleProducer records what became of a batch recorded as pending: the
// offsets it got, or, when it failed on its way into the log (the group
// lost leadership, broke or closed), that the producer state no longer
// matches the log: the next append rebuilds it from the committed log.
func (p *Partition) SettleProducer(pid int64, pending *replica.Pending, info partition.AppendInfo, err error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if err != nil {
		p.producersEpoch = -1
		return
	}
	p.producers.Settle(pid, pending, info)
}

// MarkerFence is why EnqueueMarker refused a marker, if it did.
type MarkerFence int

const (
	// MarkerNotFenced: the marker was enqueued (or failed otherwise).
	MarkerNotFenced MarkerFence = iota
	// MarkerEpochOld: the producer's epoch is newer than the marker's,
	// so a newer coordinator decision superseded it.
	MarkerEpochOld
	// MarkerCoordinatorOld: the marker comes from an older coordinator
	// epoch than one the partition has seen.
	MarkerCoordinatorOld
)

// EnqueueMarker places a transaction marker of producer pid (epoch) from
// the coordinator in coordEpoch in the log's order, under the append lock
// as a produce, not while the leader's round writes it. The state counts
// it at once, so a batch of the producer checked after it is known to come
// after the marker. It returns ctx's error if ctx ended while waiting for
// the lock (proposing then could land after a newer coordinator's
// decision), a *kerr.Error if this replica cannot write, the fence if the
// marker is refused, or the Enqueue's error, wrapped.
func (p *Partition) EnqueueMarker(ctx context.Context, pid int64, epoch int16, commit bool, coordEpoch int32) (*replica.Pending, MarkerFence, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, MarkerNotFenced, err
	}
	if e := p.producersFor(); e != nil {
		return nil, MarkerNotFenced, e
	}
	epochOld, coordOld := p.producers.MarkerFenced(pid, epoch, coordEpoch)
	switch {
	case coordOld:
		return nil, MarkerCoordinatorOld, nil
	case epochOld:
		return nil, MarkerEpochOld, nil
	}
	pending, err := p.Replica.Enqueue(MarkerBatch(pid, epoch, commit, coordEpoch, time.Now().UnixMilli()))
	if err != nil {
		return nil, MarkerNotFenced, fmt.Errorf("write marker to %s-%d: %w", p.Topic, p.Index, err)
	}
	p.producers.RecordMarker(pid, epoch, coordEpoch, time.Now())
	return pending, MarkerNotFenced, nil
}

// TxnView is whether producer pid (epoch) has a transaction open here and
// how many markers it has had, for the epoch this replica leads in, or the
// error if it cannot write.
func (p *Partition) TxnView(pid int64, epoch int16) (open bool, markers uint64, e *kerr.Error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if e := p.producersFor(); e != nil {
		return false, 0, e
	}
	open, markers = p.producers.TxnView(pid, epoch)
	return open, markers, nil
}

// DescribeProducers lists the partition's active producers
// (DescribeProducers).
func (p *Partition) DescribeProducers() []kmsg.DescribeProducersResponseTopicPartitionActiveProducer {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.producers.Describe()
}

// ExpireProducers forgets the producers not heard from since cutoff.
func (p *Partition) ExpireProducers(cutoff time.Time) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.producers.Expire(cutoff)
}

// PendingBatches is how many batches the producer state holds as on their
// way into the log.
func (p *Partition) PendingBatches() int {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.producers.PendingBatches()
}

// WithAppendLock runs f under the append lock, as an append does (tests
// that write to the log beside the producers).
func (p *Partition) WithAppendLock(f func()) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	f()
}
