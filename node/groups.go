package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/spool-log/spool/node/group"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/partition"
)

// This file connects the consumer-group coordinator (package group) to the
// node: __consumer_offsets is an ordinary topic of the catalog, placed like
// any other, and this node coordinates the groups of each of its partitions
// that it leads, loading a partition's groups the first time it is asked
// about them and dropping them when it stops leading it.
//
// The coordinator is created on the first group request and closed when the
// node starts shutting down, which answers parked JoinGroup/SyncGroup
// requests so that graceful shutdown does not wait out rebalance timeouts.

// groupNode is the node's coordinator (Node.groupCoord).
type groupNode struct {
	coord    atomic.Pointer[group.Coordinator] // nil until the first group request
	createMu sync.Mutex                        // one creation at a time; a failed one is retried
	loads    partitionLoads                    // one replay of each partition at a time
	// loadedEpoch is the leader epoch each loaded partition was replayed
	// in (int32 -> int32): leadership that left and came back may have
	// missed commits made meanwhile by another leader, so a partition
	// loaded in another epoch is replayed again.
	loadedEpoch sync.Map
}

// offsetsTopicConfigs keep the newest record of every key forever: the
// topic is compacted (offsets.topic's cleanup.policy), never trimmed by
// retention.
var offsetsTopicConfigs = map[string]string{
	"cleanup.policy":  "compact",
	"retention.ms":    "-1",
	"retention.bytes": "-1",
	"segment.bytes":   strconv.Itoa(100 << 20), // offsets.topic.segment.bytes
}

// groupConfig is the coordinator's configuration from the node's.
func (n *Node) groupConfig() group.Config {
	cfg := group.DefaultConfig()
	cfg.Logger = n.log
	cfg.PartitionCount = func(topic string) (int32, bool) {
		spec, ok := n.catalog.Topic(topic)
		return spec.Partitions, ok
	}
	gs := n.cfg.Groups
	cfg.InitialRebalanceDelay = gs.InitialRebalanceDelay
	cfg.MinSessionTimeout = gs.MinSessionTimeout
	cfg.MaxSessionTimeout = gs.MaxSessionTimeout
	cfg.Partitions = gs.OffsetsTopicPartitions
	cfg.ConsumerSessionTimeout = gs.ConsumerSessionTimeout
	cfg.ConsumerHeartbeatInterval = gs.ConsumerHeartbeatInterval
	cfg.Topic = func(name string) ([16]byte, int32, bool) {
		spec, ok := n.catalog.Topic(name)
		return spec.ID, spec.Partitions, ok
	}
	cfg.TopicNames = func() []string {
		var names []string
		for _, spec := range n.catalog.Topics() {
			if !strings.HasPrefix(spec.Name, "__") {
				names = append(names, spec.Name)
			}
		}
		return names
	}
	cfg.TopicName = func(id [16]byte) (string, bool) {
		spec, ok := n.catalog.TopicByID(TopicID(id))
		return spec.Name, ok
	}
	// An existing topic decides: a group's partition must never change.
	if spec, ok := n.catalog.Topic(group.TopicName); ok {
		cfg.Partitions = spec.Partitions
	}
	return cfg
}

// groups returns the node's coordinator, creating it (and
// __consumer_offsets) on first use.
func (n *Node) groups() (*group.Coordinator, *groupNode, error) {
	if n.isClosing() {
		return nil, nil, errors.New("node shutting down")
	}
	gn := &n.groupCoord
	if coord := gn.coord.Load(); coord != nil {
		return coord, gn, nil
	}
	gn.createMu.Lock()
	defer gn.createMu.Unlock()
	if coord := gn.coord.Load(); coord != nil {
		return coord, gn, nil
	}
	// A failure leaves coord nil, so a later request tries again rather
	// than the node failing group requests forever.
	cfg := n.groupConfig()
	if _, ok := n.catalog.Topic(group.TopicName); !ok {
		// offsets.topic.replication.factor, capped by the roster rather
		// than by the brokers alive now: every node that creates the topic
		// concurrently must make the same spec, so that the creates derive
		// one topic id and none of them loses its committed offsets.
		// The largest odd factor (replication_factor.go): 2 brokers give
		// 1 copy, so either one's loss leaves the other's groups working.
		rf := n.clusterFactor(int(n.cfg.Groups.OffsetsTopicReplicationFactor))
		if _, err := n.parts.CreateTopic(hosted.Create{Name: group.TopicName, Partitions: cfg.Partitions, ReplicationFactor: rf, Configs: offsetsTopicConfigs, Auto: true}); err != nil && kerrOf(err) != kerr.TopicAlreadyExists {
			return nil, nil, fmt.Errorf("create %s: %w", group.TopicName, err)
		}
	}
	coord, err := group.New(cfg, offsetsLog{n, group.TopicName})
	if err != nil {
		return nil, nil, err
	}
	gn.coord.Store(coord)
	// The coordinator closes with the node's other loops; created during
	// Shutdown, it closes at once.
	if !n.loops.Go(func(ctx context.Context) {
		<-ctx.Done()
		coord.Close()
	}) {
		coord.Close()
	}
	return coord, gn, nil
}

// groupCoordinatorFor returns the coordinator if this node coordinates
// groupID, loading the group's partition when needed, or the error code the
// client should see: NOT_COORDINATOR sends it back to FindCoordinator.
func (n *Node) groupCoordinatorFor(groupID string) (*group.Coordinator, int16) {
	coord, gn, err := n.groups()
	if err != nil {
		n.log.WithError(err).Warn("group coordinator unavailable")
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	if code := n.ensureGroupPartition(coord, gn, coord.Partition(groupID)); code != 0 {
		return nil, code
	}
	return coord, 0
}

// ensureGroupPartition loads partition p of __consumer_offsets if this node
// leads it, and unloads it if it no longer does.
func (n *Node) ensureGroupPartition(coord *group.Coordinator, gn *groupNode, p int32) int16 {
	return n.ensureCoordinatorPartition(group.TopicName, groupLoader{coord, gn}, &gn.loads, p, "consumer groups")
}

// groupLoader is the group coordinator as a partitionLoader: the epoch each
// partition was replayed in is the node's (gn.loadedEpoch), as leadership
// that left and came back may have missed commits made meanwhile.
type groupLoader struct {
	coord *group.Coordinator
	gn    *groupNode
}

func (l groupLoader) Loaded(p, epoch int32) bool {
	ep, _ := l.gn.loadedEpoch.Load(p)
	return l.coord.Loaded(p) && ep == epoch
}

func (l groupLoader) Load(p, epoch int32) error {
	if l.Loaded(p, epoch) {
		return nil // loaded meanwhile, by the request before
	}
	if l.coord.Loaded(p) {
		l.coord.Unload(p) // loaded in another epoch
	}
	if err := l.coord.Load(p); err != nil {
		return err
	}
	l.gn.loadedEpoch.Store(p, epoch)
	return nil
}

func (l groupLoader) Unload(p int32) { l.coord.Unload(p) }

// confirmTimeout bounds ConfirmLeader's wait for a quorum's word.
const confirmTimeout = 5 * time.Second

// confirmCoordinator confirms, after a request arrived, that this node
// still leads groupID's partition in the epoch its groups were loaded in,
// before the request is answered from memory: a leader paused or cut off
// (a zombie) believes it leads until it hears of a newer term, and would
// otherwise serve offsets older than commits a newer leader acknowledged.
func (n *Node) confirmCoordinator(ctx context.Context, coord *group.Coordinator, groupID string) int16 {
	p := coord.Partition(groupID)
	lp, e := n.leaderPartition(group.TopicName, p)
	if e != nil {
		return kerr.NotCoordinator.Code
	}
	ep, ok := n.groupCoord.loadedEpoch.Load(p)
	if !ok {
		return kerr.NotCoordinator.Code
	}
	ctx, cancel := context.WithTimeout(ctx, confirmTimeout)
	defer cancel()
	if err := lp.Replica.ConfirmLeader(ctx, ep.(int32)); err != nil {
		n.log.WithFields(logrus.Fields{"group": groupID, "partition": p, "epoch": ep}).Debug("coordinator not confirmed as leader")
		return kerr.NotCoordinator.Code
	}
	return 0
}

// loadAllGroupPartitions loads every partition this node leads, for the
// requests that span all groups (ListGroups).
func (n *Node) loadAllGroupPartitions() (*group.Coordinator, int16) {
	coord, gn, err := n.groups()
	if err != nil {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	var code int16
	var unread []int32
	for p := range coord.Partitions() {
		c := n.ensureGroupPartition(coord, gn, p)
		if c == 0 || c == kerr.NotCoordinator.Code {
			continue
		}
		if !n.hostsOffsetsPartition(p) {
			// Not this node's to answer: its replicas are elsewhere
			// (all down, when it has no leader), and Metadata names them
			// (the CLI's group list reports them). Answering an error for
			// it would have every client drop this node's own groups.
			continue
		}
		code = c
		unread = append(unread, p)
	}
	if len(unread) > 0 {
		n.log.WithFields(logrus.Fields{"partitions": unread, "code": kerr.ErrorForCode(code)}).Debug("list groups: some __consumer_offsets partitions this node holds cannot be read")
	}
	return coord, code
}

// hostsOffsetsPartition tells whether this node is a replica of
// __consumer_offsets partition p (or one a move is adding).
func (n *Node) hostsOffsetsPartition(p int32) bool {
	spec, ok := n.catalog.Topic(group.TopicName)
	return ok && int(p) < len(spec.Replicas) && spec.Hosts(p, n.cfg.NodeID)
}

// groupClient is who sent a request, as DescribeGroups shows it.
func groupClient(clientID *string, remote net.Addr) group.Client {
	var c group.Client
	if clientID != nil {
		c.ID = *clientID
	}
	if remote != nil {
		host := remote.String()
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		c.Host = "/" + host
	}
	return c
}

// offsetsCommitTimeout bounds an offset commit's wait for its replication.
const offsetsCommitTimeout = 30 * time.Second

// offsetsLog is group.Log on the replicas of __consumer_offsets (and
// txn.Log on those of __transaction_state): commits go through a replica's
// produce path like any producer's batch, with acks=all.
type offsetsLog struct {
	n     *Node
	topic string
}

func (l offsetsLog) Append(p int32, batch []byte) error {
	lp, e := l.n.leaderPartition(l.topic, p)
	if e != nil {
		return e
	}
	// A commit is acknowledged only once it is on disk, whatever the
	// broker's default flush policy: the append itself fsyncs, which is
	// far cheaper than a Flush (that also rewrites the recovery point).
	if c := lp.Replica.Config(); c.Flush != partition.FlushEveryAppend {
		c.Flush = partition.FlushEveryAppend
		lp.Replica.SetConfig(c)
	}
	// Bounded: a leader cut off from its group's majority never learns
	// whether the commit happened (replica.ErrOutcomeUnknown).
	ctx, cancel := context.WithTimeout(context.Background(), offsetsCommitTimeout)
	defer cancel()
	_, err := lp.Replica.Produce(ctx, batch, replica.AcksAll)
	if errors.Is(err, replica.ErrNotLeader) {
		return kerr.NotLeaderForPartition
	}
	if err != nil {
		return fmt.Errorf("append to %s-%d: %w", l.topic, p, err)
	}
	return nil
}

func (l offsetsLog) Replay(p int32, fn func([]byte) error) error {
	lp, e := l.n.leaderPartition(l.topic, p)
	if e != nil {
		return e
	}
	const chunk = 1 << 20
	off, end := lp.Replica.LogStartOffset(), lp.Replica.HighWatermark()
	for off < end {
		s, err := lp.Replica.Read(off, chunk)
		if err != nil {
			return fmt.Errorf("read %s-%d at %d: %w", l.topic, p, off, err)
		}
		buf := make([]byte, 0, s.Size())
		for _, r := range s.Regions {
			b := make([]byte, r.Length)
			if _, err := r.File.ReadAt(b, r.Position); err != nil {
				s.Release()
				return fmt.Errorf("read %s-%d at %d: %w", l.topic, p, off, err)
			}
			buf = append(buf, b...)
		}
		s.Release()
		if len(buf) == 0 {
			return nil
		}
		next := off
		for pos := 0; pos+partition.BatchHeaderSize <= len(buf); {
			h, err := partition.ParseBatchHeader(buf[pos:])
			if err != nil || h.Size() <= 0 || pos+int(h.Size()) > len(buf) {
				return fmt.Errorf("parse batch of %s-%d at offset %d: %v", l.topic, p, next, err)
			}
			next = h.LastOffset() + 1
			pos += int(h.Size())
		}
		if next <= off {
			return fmt.Errorf("replay of %s-%d stuck at offset %d", l.topic, p, off)
		}
		if err := fn(buf); err != nil {
			return fmt.Errorf("replay %s-%d: %w", l.topic, p, err)
		}
		off = next
	}
	return nil
}
