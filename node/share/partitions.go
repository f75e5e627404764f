package share

import (
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Stats counts what share partitions on this node did, for metrics.
type Stats struct {
	Acquired     atomic.Int64 // acquisitions, redeliveries included
	Acknowledged atomic.Int64 // accepted
	Released     atomic.Int64 // released by a member or its closed session
	Rejected     atomic.Int64
	Redelivered  atomic.Int64 // acquisitions of a record delivered before
	Archived     atomic.Int64 // archived at the delivery limit
	LockExpiries atomic.Int64
}

// TopicPartition names a partition by topic id, as the share APIs do.
type TopicPartition struct {
	TopicID   [16]byte
	Partition int32
}

// Key names one share partition: a group on a partition.
type Key struct {
	Group string
	TopicPartition
}

// Partitions is this node's share-partition state, for the partitions it
// leads, and the share sessions of the members fetching from it.
type Partitions struct {
	cfg     Config
	configs func(group string) GroupConfig
	persist Persister // nil: state lives in memory only
	now     func() time.Time

	mu       sync.Mutex
	parts    map[Key]*sharePartition
	sessions map[sessionKey]*session

	Stats Stats
}

// NewPartitions builds the state; configs gives a group's configs (the
// defaults taken over by the group's overrides); persist (nil: none) makes
// acknowledgements durable.
func NewPartitions(cfg Config, configs func(group string) GroupConfig, persist Persister) *Partitions {
	return &Partitions{cfg: cfg, configs: configs, persist: persist, now: time.Now,
		parts: map[Key]*sharePartition{}, sessions: map[sessionKey]*session{}}
}

// GroupConfig is group's configs as this node applies them.
func (p *Partitions) GroupConfig(group string) GroupConfig { return p.configs(group) }

func (p *Partitions) get(k Key, create bool) (*sharePartition, *kerr.Error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sp := p.parts[k]
	if sp == nil && create {
		if len(p.parts) >= p.cfg.MaxSharePartitions {
			return nil, kerr.ShareSessionLimitReached
		}
		sp = newSharePartition()
		p.parts[k] = sp
	}
	return sp, nil
}

// Fetched is what one partition of a ShareFetch acquired.
type Fetched struct {
	Ranges  []Range
	Records []byte // the batches holding Ranges, concatenated
}

// Fetch acquires for member what k's partition has available, at most
// maxRecords records (0: Config.MaxRecordsPerFetch) in about maxBytes of
// batches. log is the partition's log on its leader.
func (p *Partitions) Fetch(k Key, member string, log Log, maxRecords, maxBytes int) (Fetched, *kerr.Error) {
	if maxRecords <= 0 || maxRecords > p.cfg.MaxRecordsPerFetch {
		maxRecords = p.cfg.MaxRecordsPerFetch
	}
	if maxBytes <= 0 || maxBytes > p.cfg.MaxFetchBytes {
		maxBytes = p.cfg.MaxFetchBytes
	}
	sp, e := p.get(k, true)
	if e != nil {
		return Fetched{}, e
	}
	cfg := p.configs(k.Group)
	if e := p.load(sp, k, log, cfg); e != nil {
		return Fetched{}, e
	}
	start, upTo, err := log.Bounds(cfg.ReadCommitted)
	if err != nil {
		return Fetched{}, kerr.KafkaStorageError
	}
	now := p.now().UnixNano()

	sp.mu.Lock()
	sp.initLocked(start, upTo, cfg)
	sp.clampLocked(start)
	sp.expireLocked(now, cfg.DeliveryLimit, &p.Stats)
	sp.lastTouched = now
	from, ok := sp.planLocked(upTo, p.cfg.MaxInFlight)
	sp.mu.Unlock()
	if !ok || from >= upTo {
		return Fetched{}, nil
	}

	batches, err := log.Read(from, upTo, maxBytes) // no lock held
	if err != nil {
		return Fetched{}, kerr.KafkaStorageError
	}
	if len(batches) == 0 {
		return Fetched{}, nil
	}
	var aborted []Aborted
	if cfg.ReadCommitted {
		aborted = log.Aborted(from, batches[len(batches)-1].Header.LastOffset()+1)
		sort.Slice(aborted, func(i, j int) bool { return aborted[i].FirstOffset < aborted[j].FirstOffset })
	}

	sp.mu.Lock()
	sp.clampLocked(start)
	sp.expireLocked(now, cfg.DeliveryLimit, &p.Stats)
	ranges, raws := sp.acquireLocked(member, batches, aborted, upTo, now, cfg, p.cfg.MaxInFlight, maxRecords, &p.Stats)
	sp.mu.Unlock()
	if lastDelivery(ranges, cfg.DeliveryLimit) {
		if e := p.persistLastDelivery(sp, k, log.LeaderEpoch(), cfg); e != nil {
			return Fetched{}, e
		}
	}
	var size int
	for _, r := range raws {
		size += len(r)
	}
	out := Fetched{Ranges: ranges, Records: make([]byte, 0, size)}
	for _, r := range raws {
		out.Records = append(out.Records, r...)
	}
	return out, nil
}

// lastDelivery tells whether ranges hold a record delivered the limit of
// times.
func lastDelivery(ranges []Range, limit int) bool {
	return slices.ContainsFunc(ranges, func(r Range) bool { return int(r.DeliveryCount) >= limit })
}

// persistLastDelivery makes a fetch's last deliveries durable before the
// records leave: the snapshot keeps them archived (snapshotLocked), so a
// new leader after a failover does not deliver them once more than the
// limit. Other acquisitions are not written (a lost one costs a delivery
// count one low, as in Kafka, whose share-partition state does not record
// the transient Acquired state either); this one would cost a delivery
// past the limit. On an error the records stay acquired by the member,
// never sent: their lock lapses into archived.
func (p *Partitions) persistLastDelivery(sp *sharePartition, k Key, epoch int32, cfg GroupConfig) *kerr.Error {
	if p.persist == nil {
		return nil
	}
	sp.writer <- struct{}{}
	defer func() { <-sp.writer }()
	sp.mu.Lock()
	if sp.loadedEpoch != epoch {
		sp.mu.Unlock()
		return kerr.NotLeaderForPartition // reloaded for another leadership meanwhile
	}
	snap := sp.snapshotLocked(epoch, cfg.DeliveryLimit)
	sp.mu.Unlock()
	if err := p.persist.Write(k, snap); err != nil { // the writer token, not the lock, held
		return kerr.CoordinatorNotAvailable
	}
	return nil
}

// Acknowledge applies member's acknowledgements on k, all or none, and
// returns once they are durable (else an error, and nothing changed:
// the records stay with member). RENEW is accepted only when renew is set
// (ShareFetch/ShareAcknowledge v2).
func (p *Partitions) Acknowledge(k Key, member string, log Log, batches []AckBatch, renew bool) *kerr.Error {
	if len(batches) == 0 {
		return nil
	}
	maxType := AckReject
	if renew {
		maxType = AckRenew
	}
	sp, _ := p.get(k, false)
	if sp == nil {
		return kerr.InvalidRecordState
	}
	cfg := p.configs(k.Group)
	epoch := log.LeaderEpoch()
	sp.mu.Lock()
	loaded := sp.loadedEpoch == epoch
	sp.mu.Unlock()
	if !loaded {
		return kerr.InvalidRecordState // acquired under another leadership: those locks are gone
	}
	sp.writer <- struct{}{}
	defer func() { <-sp.writer }()

	now := p.now().UnixNano()
	sp.mu.Lock()
	sp.expireLocked(now, cfg.DeliveryLimit, &p.Stats)
	sp.lastTouched = now
	if sp.loadedEpoch != epoch {
		sp.mu.Unlock()
		return kerr.InvalidRecordState
	}
	if e := sp.checkAcks(member, batches, maxType); e != nil {
		sp.mu.Unlock()
		return e
	}
	if !sp.markAcksLocked(batches, now, cfg) || p.persist == nil {
		sp.resolveLocked(true, now, cfg, &p.Stats)
		sp.mu.Unlock()
		return nil
	}
	snap := sp.snapshotLocked(epoch, cfg.DeliveryLimit)
	sp.mu.Unlock()

	err := p.persist.Write(k, snap) // the writer token, not the lock, held

	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.resolveLocked(err == nil, p.now().UnixNano(), cfg, &p.Stats)
	if err != nil {
		return kerr.CoordinatorNotAvailable
	}
	return nil
}

// load makes sp current for the leader epoch log is in: the snapshot the
// store holds, claimed for this epoch, or a new start by the group's
// reset, stored before any record is delivered from it.
func (p *Partitions) load(sp *sharePartition, k Key, log Log, cfg GroupConfig) *kerr.Error {
	epoch := log.LeaderEpoch()
	sp.mu.Lock()
	ok := sp.loadedEpoch == epoch
	sp.mu.Unlock()
	if ok {
		return nil
	}
	sp.writer <- struct{}{}
	defer func() { <-sp.writer }()
	sp.mu.Lock()
	ok = sp.loadedEpoch == epoch
	sp.mu.Unlock()
	if ok {
		return nil
	}
	if p.persist == nil {
		sp.mu.Lock()
		sp.loadedEpoch = epoch
		sp.mu.Unlock()
		return nil
	}
	snap, found, err := p.persist.Claim(k, epoch)
	if err != nil {
		return kerr.CoordinatorNotAvailable
	}
	start, upTo, err := log.Bounds(cfg.ReadCommitted)
	if err != nil {
		return kerr.KafkaStorageError
	}
	sp.mu.Lock()
	if found {
		sp.restoreLocked(snap)
	} else {
		sp.initialized, sp.recs, sp.acquired, sp.nextExpiry = false, nil, 0, 0
		sp.initLocked(start, upTo, cfg)
	}
	sp.clampLocked(start)
	fresh := sp.snapshotLocked(epoch, cfg.DeliveryLimit)
	sp.mu.Unlock()
	// Written back in this epoch even when found: the store then holds
	// the claim durably, so a deposed leader's later write is refused
	// even by the store's next leader.
	if err := p.persist.Write(k, fresh); err != nil {
		return kerr.CoordinatorNotAvailable
	}
	sp.mu.Lock()
	sp.loadedEpoch = epoch
	sp.mu.Unlock()
	return nil
}

// NextExpiry is the earliest lock deadline among the share partitions of
// group on tps, zero when none holds a lock: a long-polling fetch waits
// no longer, since a lapsed lock makes a record available.
func (p *Partitions) NextExpiry(group string, tps []TopicPartition) time.Time {
	var next int64
	for _, tp := range tps {
		sp, _ := p.get(Key{group, tp}, false)
		if sp == nil {
			continue
		}
		sp.mu.Lock()
		if e := sp.nextExpiry; e != 0 && (next == 0 || e < next) {
			next = e
		}
		sp.mu.Unlock()
	}
	if next == 0 {
		return time.Time{}
	}
	return time.Unix(0, next)
}

// Reset sets k's SPSO to start with nothing in flight, durably, on the
// partition's leader (AlterShareGroupOffsets; the caller checked the
// group has no members).
func (p *Partitions) Reset(k Key, log Log, start int64) *kerr.Error {
	sp, e := p.get(k, true)
	if e != nil {
		return e
	}
	cfg := p.configs(k.Group)
	if e := p.load(sp, k, log, cfg); e != nil {
		return e
	}
	sp.writer <- struct{}{}
	defer func() { <-sp.writer }()
	epoch := log.LeaderEpoch()
	sp.mu.Lock()
	sp.initialized, sp.spso, sp.recs, sp.acquired, sp.nextExpiry = true, start, nil, 0, 0
	snap := sp.snapshotLocked(epoch, cfg.DeliveryLimit)
	sp.mu.Unlock()
	if p.persist == nil {
		return nil
	}
	if err := p.persist.Write(k, snap); err != nil {
		sp.mu.Lock()
		sp.loadedEpoch = -1 // not what the store holds: reload
		sp.mu.Unlock()
		return kerr.CoordinatorNotAvailable
	}
	return nil
}

// Delete removes k's state here and in the store
// (DeleteShareGroupOffsets): the group starts the partition afresh.
func (p *Partitions) Delete(k Key) *kerr.Error {
	sp, _ := p.get(k, false)
	if sp != nil {
		sp.writer <- struct{}{}
		defer func() { <-sp.writer }()
	}
	if p.persist != nil {
		if err := p.persist.Forget(k); err != nil {
			return kerr.CoordinatorNotAvailable
		}
	}
	p.mu.Lock()
	delete(p.parts, k)
	p.mu.Unlock()
	return nil
}

// PartitionState describes one share partition.
type PartitionState struct {
	TopicPartition
	StartOffset int64 // the SPSO
	EndOffset   int64 // the SPEO
	// InFlight counts the window's records not yet acknowledged or
	// archived: acquired, or available for redelivery.
	InFlight int
	Acquired int // the records of InFlight a member holds now
}

// Describe lists group's share partitions on this node, by topic id and
// partition.
func (p *Partitions) Describe(group string) []PartitionState {
	p.mu.Lock()
	var keys []Key
	for k := range p.parts {
		if k.Group == group {
			keys = append(keys, k)
		}
	}
	p.mu.Unlock()
	out := make([]PartitionState, 0, len(keys))
	for _, k := range keys {
		sp, _ := p.get(k, false)
		if sp == nil {
			continue
		}
		sp.mu.Lock()
		if sp.initialized {
			out = append(out, PartitionState{TopicPartition: k.TopicPartition, StartOffset: sp.spso, EndOffset: sp.end(), InFlight: sp.inFlightLocked(), Acquired: sp.acquired})
		}
		sp.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.TopicID != b.TopicID {
			return string(a.TopicID[:]) < string(b.TopicID[:])
		}
		return a.Partition < b.Partition
	})
	return out
}

// StartOffset is k's SPSO, and false when this node keeps no state for it.
func (p *Partitions) StartOffset(k Key) (int64, bool) {
	sp, _ := p.get(k, false)
	if sp == nil {
		return 0, false
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.spso, sp.initialized
}

// Forget drops every share partition of group (its group was deleted).
func (p *Partitions) Forget(group string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.parts {
		if k.Group == group {
			delete(p.parts, k)
		}
	}
}
