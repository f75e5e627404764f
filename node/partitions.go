package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/spool-log/spool/internal/recordbatch/compression"
	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/replica/raftlog"
	"github.com/spool-log/spool/node/topicconfig"
	"github.com/spool-log/spool/partition"
)

// tp names one topic partition.
type tp struct {
	topic     string
	partition int32
}

// localPartition is a partition whose log lives on this node.
type localPartition struct {
	topic   string
	topicID TopicID
	index   int32
	dir     string
	// replica is the only way to the partition's log: appends, reads up
	// to the high watermark, leadership, long-poll wake-ups, maintenance.
	replica  *replica.Replica
	settings topicconfig.Settings
	// liveSettings, once set, replaces settings (topic_alter.go).
	liveSettings atomic.Pointer[topicconfig.Settings]

	// appendMu makes the idempotence check and the batch's place in the
	// log's order one step, so two batches of one producer cannot both
	// pass the sequence check. It is held while the batch is enqueued
	// (replica.Enqueue), never while the leader's round appends it: the
	// producer state is the committed log plus this leader's proposals,
	// those not yet appended recorded as pending.
	appendMu  sync.Mutex
	producers *hosted.Producers
	// producersEpoch is the leader epoch producers was rebuilt for: a
	// replica that starts leading in another epoch rebuilds it from the
	// committed log first (an earlier leader's appends are not in it).
	producersEpoch int32
	// txns is the read_committed view of the log; its own locks.
	txns hosted.TxnIndex

	// Counted per append; flushMetrics hands the growth since its last
	// flush (the flushed marks, its own) to go-metrics.
	producedBytes, producedRecords atomic.Int64
	flushedBytes, flushedRecords   int64
	// fetchedBytes counts the record bytes consumers fetched from it as
	// leader (the console's consume rate: node/console.go).
	fetchedBytes atomic.Int64
}

func partitionDir(dataDir, topic string, p int32) string {
	return filepath.Join(dataDir, topic+"-"+strconv.FormatInt(int64(p), 10))
}

// parsePartitionDir splits a <topic>-<n> directory name. The topic may itself
// contain dashes, so the partition is what follows the last one.
func parsePartitionDir(name string) (string, int32, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != name[i+1:] {
		return "", 0, false
	}
	topic := name[:i]
	if membership.ValidateTopicName(topic) != nil {
		return "", 0, false
	}
	return topic, int32(n), true
}

// rebuildProducers replays the committed log's tail into the producer
// state (hosted.Producers.Rebuild). The caller holds appendMu, or has the
// partition to itself (openPartition).
func (p *localPartition) rebuildProducers(now time.Time) error {
	if err := p.producers.Rebuild(p.replica, now); err != nil {
		return fmt.Errorf("%s: %w", p.dir, err)
	}
	return nil
}

// stable returns the partition's last stable offset, scanning what the
// index has not seen yet (or, while another request scans, as far as that
// scan has come).
func (p *localPartition) stable() (int64, error) {
	hw, start := p.replica.HighWatermark(), p.replica.LogStartOffset()
	if err := p.txns.Refresh(p.replica, p.dir); err != nil {
		return 0, err
	}
	return p.txns.StableOffset(hw, start), nil
}

// txnCheckpointInterval is how often due txn-index checkpoints are
// written (and at shutdown), off the fetch path.
const txnCheckpointInterval = 5 * time.Second

// flushTxnIndexes writes the due txn-index checkpoints of the local
// partitions.
func (n *Node) flushTxnIndexes() {
	for _, p := range n.localPartitions() {
		p.txns.FlushCheckpoint(p.dir)
	}
}

// producersFor makes the producer state current for the epoch this
// replica leads in, rebuilding it from the committed log when that epoch
// is new: after a leader change the batches an earlier leader appended
// are known only from the log, and a retry of one must be recognised, not
// appended twice. The caller holds appendMu.
func (p *localPartition) producersFor(n *Node) *kerr.Error {
	epoch, ok := p.replica.WritableEpoch()
	if !ok {
		return kerr.NotLeaderForPartition
	}
	if epoch == p.producersEpoch {
		return nil
	}
	p.producers = hosted.NewProducers()
	if err := p.rebuildProducers(time.Now()); err != nil {
		n.log.WithError(err).WithField("topic", p.topic).WithField("partition", p.index).Warn("rebuilding producer state failed")
		p.producers = hosted.NewProducers()
	}
	p.producersEpoch = epoch
	return nil
}

// settleProducer records what became of a batch recorded as pending: the
// offsets it got, or, when it failed on its way into the log (the group
// lost leadership, broke or closed), that the producer state no longer
// matches the log: the next append rebuilds it from the committed log.
func (p *localPartition) settleProducer(pid int64, pending *replica.Pending, info partition.AppendInfo, err error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if err != nil {
		p.producersEpoch = -1
		return
	}
	p.producers.Settle(pid, pending, info)
}

// openPartitionHook, when set (tests), runs at the start of every
// openPartition: a test holds one there as a slow disk would.
var openPartitionHook atomic.Pointer[func(topic string, index int32)]

// openPartition opens (creating if needed) one local partition.
func (n *Node) openPartition(spec TopicSpec, index int32) (*localPartition, error) {
	if hook := openPartitionHook.Load(); hook != nil {
		(*hook)(spec.Name, index)
	}
	settings, err := topicconfig.Parse(n.cfg.Topic, spec.Configs)
	if err != nil {
		return nil, fmt.Errorf("topic %s config: %w", spec.Name, err)
	}
	dir := partitionDir(n.cfg.DataDir, spec.Name, index)
	// Taken first, whatever happens next: it describes the directory as
	// the last stop left it, which this open may change.
	shutdownPoint, written := n.shutdownPoints.take(dir)
	// A directory left by a deleted incarnation of the topic goes first
	// (catalog_partition_id.go).
	recordID, err := n.claimPartitionDir(dir, spec, index)
	if err != nil {
		return nil, err
	}
	pcfg := settings.PartitionConfig(n.cfg.Topic, n.files, compression.Codecs{})
	pcfg.QuarantineDir = n.quarantine.Dir()
	pcfg.OnCorruption = n.scrub.OnRecoveryCut(spec.Name, index)
	var shutdownCommit *raftlog.CommitPoint
	if shutdownPoint != nil {
		lp := shutdownPoint.Log
		lp.Written = written
		pcfg.ShutdownPoint = &lp
		shutdownCommit = shutdownPoint.Commit
	}
	log, err := partition.Open(dir, pcfg)
	if err != nil {
		return nil, fmt.Errorf("open partition %s: %w", dir, err)
	}
	if recordID {
		if err := recordPartitionTopicID(dir, spec.ID); err != nil {
			log.Close()
			return nil, err
		}
	}
	// A replica with no Raft state starts the group from the partition's
	// replica list, with a vote, only when the group is new: the list
	// names it and the catalog records no leader of the partition yet
	// (led.go). The configuration is the one the group began with or
	// ended its last move on, never a move's target, which the group
	// does not have yet (raft would take it as the voters, and a replica
	// first in it would campaign at once with a learner's vote); a move
	// may be recorded before any replica of a new topic opened, and a
	// group none of whose replicas starts never elects a leader to carry
	// it out. Any other replica with no Raft state joins
	// (replica.Config.Join): no configuration, no vote, the leader's
	// snapshot first. That is a replica only a move names, and one whose
	// state was lost (a replaced disk): with its votes and log forgotten,
	// it must not help a lagging peer win an election and overwrite what
	// a majority had committed. Once it has Raft state it opens as any
	// replica.
	join := !containsID(spec.Replicas[index], n.cfg.NodeID) || spec.HadLeader(index)
	rep, err := replica.Open(log, replica.Config{Self: n.cfg.NodeID, Replicas: spec.Preferred(index), Voters: spec.Replicas[index],
		Alive: n.agent.IsAlive, Driver: n.raft, Group: replica.GroupKey{Topic: spec.ID, Partition: index}, Join: join,
		ShutdownCommit: shutdownCommit})
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("open partition %s: %w", dir, err)
	}
	p := &localPartition{
		topic:     spec.Name,
		topicID:   spec.ID,
		index:     index,
		dir:       dir,
		replica:   rep,
		settings:  settings,
		producers: hosted.NewProducers(),
	}
	p.producersEpoch, _ = rep.WritableEpoch()
	if err := p.rebuildProducers(time.Now()); err != nil {
		// The data is fine; only duplicate detection across the restart
		// is lost, as with an expired producer.
		n.log.WithError(err).WithField("topic", spec.Name).WithField("partition", index).Warn("rebuilding producer state failed")
		p.producers = hosted.NewProducers()
	}
	return p, nil
}

// partition returns the open local partition, if any.
func (n *Node) partition(topic string, index int32) *localPartition {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.parts[tp{topic, index}]
}

// reconcile makes the open partitions match the catalog: it opens every
// partition this node is a replica of and closes and quarantines the ones
// the catalog says are gone (dropPartition). A partition another reconcile
// is opening or dropping is left to it (and looked at again shortly, as the
// other planned from an older catalog); reconcile waits for none of them.
func (n *Node) reconcile() error {
	return n.reconcileWaiting("")
}

// reconcileTopic is reconcile that also waits for topic's partitions that
// another reconcile is opening or dropping, so that on return what the
// catalog says of topic holds here (CreateTopics, CreatePartitions).
func (n *Node) reconcileTopic(topic string) error {
	return n.reconcileWaiting(topic)
}

// reconcileWaiting is reconcile, waiting for the partitions of topic ("":
// none) that another reconcile is working on.
//
// reconcileMu is held while the catalog is read and the plan made (which
// partitions to drop, open, keep), never while a partition opens, closes or
// moves to quarantine: those run after it, each partition claimed in
// n.reconciling meanwhile, so a reconcile for one topic never waits on the
// disk of another's.
func (n *Node) reconcileWaiting(topic string) error {
	type dropped struct {
		p   *localPartition
		why string
	}
	var (
		drop  []dropped
		kept  []*localPartition
		opens []tp
		wait  []chan struct{}
		retry bool
		mine  = make(map[tp]chan struct{})
	)
	n.reconcileMu.Lock()
	want := make(map[tp]TopicSpec)
	for _, spec := range n.catalog.Topics() {
		for i := range spec.Replicas {
			if spec.Hosts(int32(i), n.cfg.NodeID) {
				want[tp{spec.Name, int32(i)}] = spec
			}
		}
	}
	n.mu.Lock()
	for key, p := range n.parts {
		if spec, ok := want[key]; ok && spec.ID == p.topicID {
			kept = append(kept, p)
			continue
		}
		why := n.dropReason(key.topic, key.partition, p.topicID)
		if why == "" {
			continue
		}
		if why == reasonNotReplica && n.stillVoting(p) {
			// The catalog's word against the group's: kept until the
			// group no longer counts this replica (reassign.go). The
			// catalog's list still orders the voters, so a leader it
			// leaves out hands leadership to one it names.
			if spec, ok := n.catalog.Topic(key.topic); ok && spec.ID == p.topicID && key.partition < spec.Partitions {
				want[key] = spec
			}
			kept = append(kept, p)
			retry = true
			continue
		}
		drop = append(drop, dropped{p, why})
		delete(n.parts, key)
		done := make(chan struct{})
		n.reconciling[key], mine[key] = done, done
	}
	for key := range want {
		if _, open := n.parts[key]; open {
			continue
		}
		if _, ours := mine[key]; ours {
			opens = append(opens, key) // dropped first, below
			continue
		}
		if _, busy := n.reconciling[key]; busy {
			retry = true // waited for below if it is topic's
			continue
		}
		done := make(chan struct{})
		n.reconciling[key], mine[key] = done, done
		opens = append(opens, key)
	}
	for key, done := range n.reconciling {
		// Another reconcile's open or drop of topic's partitions: the
		// caller wants its outcome (a create, a delete, a growth).
		if _, ours := mine[key]; !ours && key.topic == topic {
			wait = append(wait, done)
		}
	}
	n.mu.Unlock()
	n.reconcileMu.Unlock()

	finish := func(key tp, p *localPartition) {
		n.mu.Lock()
		if p != nil {
			n.parts[key] = p
		}
		if done, ok := mine[key]; ok && n.reconciling[key] == done {
			delete(n.reconciling, key)
			close(done)
		}
		n.mu.Unlock()
	}
	// A move's target orders the replicas (its first is the preferred
	// leader); outside the locks, as it waits for the group's round.
	for _, p := range kept {
		if spec, ok := want[tp{p.topic, p.index}]; ok {
			p.replica.SetReplicas(spec.Preferred(p.index))
		}
	}
	if retry {
		time.AfterFunc(time.Second, n.catalog.Signal)
	}
	reopen := make(map[tp]bool, len(opens))
	for _, key := range opens {
		reopen[key] = true
	}
	for _, d := range drop {
		p := d.p
		if err := p.replica.Release(); err != nil {
			n.log.WithError(err).WithField("topic", p.topic).WithField("partition", p.index).Warn("close dropped partition")
		}
		if _, err := n.quarantine.Move(p.dir, d.why, logrus.Fields{"topic": p.topic, "partition": p.index, "topic_id": p.topicID.String()}); err != nil {
			// Left in place: the next start looks at it again.
			n.log.WithError(err).WithField("topic", p.topic).WithField("partition", p.index).Error("quarantine dropped partition")
		}
		if key := (tp{p.topic, p.index}); !reopen[key] {
			finish(key, nil)
		}
	}

	var firstErr error
	for _, key := range opens {
		p, err := n.openPartition(want[key], key.partition)
		if err != nil {
			n.log.WithError(err).WithField("topic", key.topic).WithField("partition", key.partition).Error("open partition")
			if firstErr == nil {
				firstErr = err
			}
		}
		finish(key, p)
	}
	for _, done := range wait {
		<-done
	}
	return firstErr
}

// dropReason says why partition index of topic (incarnation id) this node
// holds but is not (or no longer) a replica of may go, or "" if it must
// stay. Only the catalog's positive word counts, a catalog that has only
// ever been changed once saved: a tombstone (the deletion agreed with the
// peers), a newer incarnation, or a live entry placing the partition
// elsewhere. A name the catalog does not know says nothing, and
// __consumer_offsets, where every group's offsets live, goes only on a
// tombstone or a new incarnation. Nor does a partition count below index:
// an incarnation's count only grows (CreatePartitions), so a smaller one is
// an alteration made concurrently on an entry that had not seen the growth
// (a config change elsewhere winning by its Lamport time), not a deletion.
func (n *Node) dropReason(topic string, index int32, id TopicID) string {
	cur, deleted, known := n.catalog.Entry(topic)
	switch {
	case !known:
		return ""
	case deleted:
		return "topic deleted"
	case cur.ID != id:
		return "topic recreated under a new id"
	case isInternalTopic(topic):
		return ""
	case index >= cur.Partitions:
		n.log.WithFields(logrus.Fields{"topic": topic, "partition": index, "partitions": cur.Partitions}).
			Warn("partition beyond the topic's partition count in the catalog (a growth lost to a concurrent alteration?); kept")
		return ""
	default:
		return reasonNotReplica
	}
}

const reasonNotReplica = "this node is no longer a replica"

// removeOrphans looks at every partition directory at start and
// quarantines those the catalog says are gone (dropReason): what a crash
// between the catalog update and the directory's move of a DeleteTopics
// leaves behind. A directory of a topic the catalog does not know is kept
// where it is, unopened, and logged.
func (n *Node) removeOrphans() error {
	entries, err := os.ReadDir(n.cfg.DataDir)
	if err != nil {
		return fmt.Errorf("list data dir: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		topic, index, ok := parsePartitionDir(e.Name())
		if !ok {
			continue
		}
		dir := filepath.Join(n.cfg.DataDir, e.Name())
		fields := logrus.Fields{"topic": topic, "partition": index, "dir": dir}
		spec, deleted, known := n.catalog.Entry(topic)
		if known && !deleted && index < spec.Partitions && spec.Hosts(index, n.cfg.NodeID) {
			continue
		}
		why := ""
		switch {
		case !known:
			n.log.WithFields(fields).Warn("partition directory of a topic the catalog does not know; kept, not served")
			continue
		case deleted:
			why = "topic deleted"
		case isInternalTopic(topic):
			n.log.WithFields(fields).Warn("partition directory of an internal topic this node is not a replica of; kept, not served")
			continue
		case index >= spec.Partitions:
			// Not a deletion for the same incarnation: see dropReason.
			if id, ok := dirTopicID(dir); !ok || id == spec.ID {
				n.log.WithFields(fields).Warn("partition directory beyond the topic's partition count in the catalog (a growth lost to a concurrent alteration?); kept, not served")
				continue
			}
			why = "partition of a deleted incarnation of the topic, beyond the current one's partition count"
		default:
			why = "this node is not a replica"
		}
		if _, err := n.quarantine.Move(dir, why, fields); err != nil {
			// Left in place, unopened (a full disk may refuse even the
			// quarantine's directory): the next start tries again.
			n.log.WithError(err).WithFields(fields).Error("quarantine partition directory")
		}
	}
	return nil
}

func containsID(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// closeWorkers is how many partitions are closed at once at shutdown: a
// close that has written data is fsyncs, which a file system overlaps (one
// journal commit serves several), so a few at a time cut the wait for
// thousands of partitions without flooding the disk queue.
const closeWorkers = 16

// closePartitions closes every open partition at shutdown. Each close
// makes what its partition wrote durable; what each used to record for a
// quick restart (its log's clean recovery point, its group's commit index)
// goes into one shutdown checkpoint for the data dir, written last
// (shutdown_checkpoint.go), so an idle partition's close writes nothing.
func (n *Node) closePartitions() error {
	// A partition a reconcile is opening joins n.parts when its open
	// ends: wait for those first (the loops and the listeners that start
	// reconciles have stopped).
	for {
		n.mu.Lock()
		var busy chan struct{}
		for _, done := range n.reconciling {
			busy = done
			break
		}
		n.mu.Unlock()
		if busy == nil {
			break
		}
		<-busy
	}
	n.mu.Lock()
	parts := n.parts
	n.parts = make(map[tp]*localPartition)
	n.mu.Unlock()
	work := make(chan *localPartition)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	points := n.shutdownPoints.untaken(n.cfg.DataDir)
	for range min(closeWorkers, len(parts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				p.txns.FlushCheckpoint(p.dir)
				point, err := p.replica.CloseForShutdown()
				mu.Lock()
				if err == nil {
					points[filepath.Base(p.dir)] = point
				} else if firstErr == nil {
					firstErr = fmt.Errorf("close %s: %w", p.dir, err)
				}
				mu.Unlock()
			}
		}()
	}
	for _, p := range parts {
		work <- p
	}
	close(work)
	wg.Wait()
	if len(points) == 0 {
		return firstErr
	}
	if err := writeShutdownCheckpoint(n.cfg.DataDir, points); err != nil {
		// Only the next start's speed suffers.
		n.log.WithError(err).Warn("shutdown checkpoint not written; every partition will recover from its own recovery point")
	}
	return firstErr
}

// localPartitions returns a snapshot of the open partitions.
func (n *Node) localPartitions() []*localPartition {
	n.mu.RLock()
	defer n.mu.RUnlock()
	out := make([]*localPartition, 0, len(n.parts))
	for _, p := range n.parts {
		out = append(out, p)
	}
	return out
}

// leadership is partition index of spec's leader, leader epoch, ISR and
// offline replicas as Metadata and DescribeTopicPartitions report them:
// the replica's where this node hosts the partition, else the cluster view
// (alive: the brokers alive) with the epoch unknown (-1).
func (n *Node) leadership(spec TopicSpec, index int32, alive func(int32) bool) replica.State {
	if p := n.hostedPartition(spec.Name, index, spec.ID); p != nil {
		return p.replica.State()
	}
	replicas := spec.Replicas[index]
	st := replica.State{Leader: n.cluster.Leader(replicas), LeaderEpoch: -1, ISR: []int32{}, Offline: []int32{}}
	if st.Leader >= 0 {
		st.ISR = append(st.ISR, st.Leader)
	}
	for _, r := range replicas {
		if !alive(r) {
			st.Offline = append(st.Offline, r)
		}
	}
	return st
}
