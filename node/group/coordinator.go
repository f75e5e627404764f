package group

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Client is who sent a request, recorded with the member it creates.
type Client struct {
	ID   string // the request header's client id
	Host string // the client's address as DescribeGroups shows it, e.g. "/127.0.0.1"
}

// Coordinator coordinates every group whose __consumer_offsets partition
// this node has loaded. It is safe for concurrent use; each loaded
// partition has its own lock, so groups of different partitions never wait
// on one another.
type Coordinator struct {
	cfg    Config
	log    Log
	clock  Clock
	logger logrus.FieldLogger

	mu     sync.RWMutex
	shards map[int32]*shard
}

// shard is one loaded __consumer_offsets partition and the groups it
// stores. Everything below it is guarded by mu, including timer callbacks.
type shard struct {
	partition int32

	mu      sync.Mutex
	loading bool // replay in progress: requests get COORDINATOR_LOAD_IN_PROGRESS
	gone    bool // unloaded: requests get NOT_COORDINATOR, timers do nothing
	groups  map[string]*group
	// writers holds the writer of every group with an offset-record append
	// in flight or waiting (writer.go).
	writers map[string]*groupWriter
	// pendingTxn holds the transactional offset commits awaiting their
	// producer's marker (txn_offsets.go).
	pendingTxn map[int64]*pendingTxn
	// markerEpoch is the newest epoch of each producer whose marker
	// reached the partition: older epochs are fenced.
	markerEpoch map[int64]int16
	// lateMarkers are markers that arrived during the replay.
	lateMarkers []lateMarker
	// seq stamps offset commit records in log order: appends of one
	// group are serialised by its writer, and a replay goes in order.
	seq uint64
}

// nextSeq is the log-order stamp of the next offset commit record. Called
// with s.mu held.
func (s *shard) nextSeq() uint64 {
	s.seq++
	return s.seq
}

// New returns a coordinator that has loaded no partitions yet.
func New(cfg Config, log Log) (*Coordinator, error) {
	if cfg.Partitions <= 0 {
		return nil, fmt.Errorf("group coordinator: %s partitions must be positive, got %d", TopicName, cfg.Partitions)
	}
	if log == nil {
		return nil, errors.New("group coordinator: nil log")
	}
	if cfg.MinSessionTimeout > cfg.MaxSessionTimeout {
		return nil, fmt.Errorf("group coordinator: min session timeout %v above max %v", cfg.MinSessionTimeout, cfg.MaxSessionTimeout)
	}
	c := &Coordinator{cfg: cfg, log: log, clock: cfg.Clock, logger: cfg.Logger, shards: make(map[int32]*shard)}
	if c.clock == nil {
		c.clock = wallClock{}
	}
	if c.logger == nil {
		l := logrus.New()
		l.SetLevel(logrus.WarnLevel)
		c.logger = l
	}
	return c, nil
}

// Partition returns the __consumer_offsets partition that coordinates
// groupID; the leader of that partition is the group's coordinator.
func (c *Coordinator) Partition(groupID string) int32 {
	return PartitionFor(groupID, c.cfg.Partitions)
}

// Partitions returns the configured partition count of __consumer_offsets.
func (c *Coordinator) Partitions() int32 { return c.cfg.Partitions }

// Load makes this node the coordinator of every group stored in partition
// p: it replays the partition's records into memory and then starts
// answering for those groups. Members restored from the log get a fresh
// session timeout to heartbeat in. Loading an already loaded partition does
// nothing.
func (c *Coordinator) Load(p int32) error {
	if p < 0 || p >= c.cfg.Partitions {
		return fmt.Errorf("load %s-%d: partition out of range [0,%d)", TopicName, p, c.cfg.Partitions)
	}
	c.mu.Lock()
	if _, ok := c.shards[p]; ok {
		c.mu.Unlock()
		return nil
	}
	s := &shard{partition: p, loading: true, groups: make(map[string]*group)}
	c.shards[p] = s
	c.mu.Unlock()

	start := c.clock.Now()
	groups, err := c.replay(s)
	if err != nil {
		c.mu.Lock()
		delete(c.shards, p)
		c.mu.Unlock()
		return fmt.Errorf("load %s-%d: %w", TopicName, p, err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups = groups
	s.loading = false
	for _, m := range s.lateMarkers {
		c.applyMarker(s, m.pid, m.epoch, m.committed)
	}
	s.lateMarkers = nil
	for _, g := range groups {
		for _, m := range g.members {
			c.scheduleSession(g, m)
		}
		if g.consumer != nil {
			c.rearm(g)
		}
	}
	if len(groups) > 0 {
		c.logger.WithFields(logrus.Fields{"partition": p, "groups": len(groups), "took": c.clock.Now().Sub(start)}).Info("loaded consumer groups")
	}
	return nil
}

// Unload stops coordinating the groups of partition p, as when another
// node becomes the partition's leader. Requests parked in JoinGroup or
// SyncGroup are answered NOT_COORDINATOR so their clients look the
// coordinator up again.
func (c *Coordinator) Unload(p int32) {
	c.mu.Lock()
	s := c.shards[p]
	delete(c.shards, p)
	c.mu.Unlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone = true
	for _, g := range s.groups {
		g.shutdown(kerr.NotCoordinator.Code)
	}
	s.groups = nil
}

// Loaded reports whether partition p is loaded and coordinated here.
func (c *Coordinator) Loaded(p int32) bool {
	c.mu.RLock()
	s := c.shards[p]
	c.mu.RUnlock()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.loading && !s.gone
}

// Close unloads every partition.
func (c *Coordinator) Close() {
	c.mu.RLock()
	parts := make([]int32, 0, len(c.shards))
	for p := range c.shards {
		parts = append(parts, p)
	}
	c.mu.RUnlock()
	for _, p := range parts {
		c.Unload(p)
	}
}

// lockShard returns the shard coordinating groupID, locked, or the error
// code the client should see instead.
func (c *Coordinator) lockShard(groupID string) (*shard, int16) {
	c.mu.RLock()
	s := c.shards[c.Partition(groupID)]
	c.mu.RUnlock()
	if s == nil {
		return nil, kerr.NotCoordinator.Code
	}
	s.mu.Lock()
	switch {
	case s.gone:
		s.mu.Unlock()
		return nil, kerr.NotCoordinator.Code
	case s.loading:
		s.mu.Unlock()
		return nil, kerr.CoordinatorLoadInProgress.Code
	}
	return s, 0
}

// loadedShards returns every shard that is serving, unlocked.
func (c *Coordinator) loadedShards() []*shard {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*shard, 0, len(c.shards))
	for _, s := range c.shards {
		out = append(out, s)
	}
	return out
}

// after runs fn under the shard's lock once d has passed, unless the shard
// has been unloaded meanwhile. fn must check that what it acts on is still
// current: a stopped timer may already have fired.
func (c *Coordinator) after(s *shard, d time.Duration, fn func()) Timer {
	return c.clock.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.gone || s.loading {
			return
		}
		fn()
	})
}

// append writes recs to the shard's partition as one batch.
func (c *Coordinator) append(s *shard, recs []record) error {
	if len(recs) == 0 {
		return nil
	}
	batch := encodeBatch(recs, c.clock.Now().UnixMilli())
	if err := c.log.Append(s.partition, batch); err != nil {
		return fmt.Errorf("append %d records to %s-%d: %w", len(recs), TopicName, s.partition, err)
	}
	return nil
}

// appendErrorCode is the code a client sees when storing its commit or
// group failed, translated as Kafka's GroupMetadataManager does.
func appendErrorCode(err error) int16 {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.CoordinatorNotAvailable.Code
	}
	switch ke {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return kerr.NotCoordinator.Code
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		return kerr.InvalidCommitOffsetSize.Code
	default:
		return ke.Code
	}
}
