package node

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/internal/recordbatch/compression"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/replica/raftlog"
	"github.com/spool-log/spool/node/tier"
	"github.com/spool-log/spool/node/topicconfig"
	"github.com/spool-log/spool/partition"
)

// tp names one topic partition.
type tp struct {
	topic     string
	partition int32
}

// localPartition is a partition whose log lives on this node
// (node/hosted).
type localPartition = hosted.Partition

// txnCheckpointInterval is how often due txn-index checkpoints are
// written (and at shutdown), off the fetch path.
const txnCheckpointInterval = 5 * time.Second

// flushTxnIndexes writes the due txn-index checkpoints of the local
// partitions.
func (n *Node) flushTxnIndexes() {
	for _, p := range n.localPartitions() {
		p.Txns.FlushCheckpoint(p.Dir)
	}
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
	dir := hosted.PartitionDir(n.cfg.DataDir, spec.Name, index)
	// Taken first, whatever happens next: it describes the directory as
	// the last stop left it, which this open may change.
	shutdownPoint, written := n.shutdownPoints.Take(dir)
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
	// Damage an earlier scrub found here is marked again before anything
	// reads the log (node/scrub's findings.go).
	n.scrub.Recheck(spec.Name, index, log)
	// A replica with no Raft state starts the group from the partition's
	// replica list, with a vote, only when the group is new: the list
	// names it and the catalog records no leader of the partition yet
	// (node/topics' led.go). The configuration is the one the group began with or
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
	// A replica rebuilt from its peers (node/hosted's repair.go) joins too.
	join := !containsID(spec.Replicas[index], n.cfg.NodeID) || spec.HadLeader(index) || hosted.Rebuilding(dir)
	if settings.RemoteRecovery && !join {
		if err := n.restorePartition(dir, spec.Name, index, log); err != nil {
			log.Close()
			return nil, fmt.Errorf("open partition %s: %w", dir, err)
		}
	}
	var remote replica.RemoteLog
	m, err := n.tier.OpenManifest(dir, settings.RemoteStorage)
	if m != nil {
		remote = m
	}
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("open partition %s: %w", dir, err)
	}
	rep, err := replica.Open(log, replica.Config{Self: n.cfg.NodeID, Replicas: spec.Preferred(index), Voters: spec.Replicas[index],
		Alive: n.agent.IsAlive, Driver: n.repl.Driver(), Group: replica.GroupKey{Topic: spec.ID, Partition: index}, Join: join,
		ShutdownCommit: shutdownCommit, Remote: remote})
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("open partition %s: %w", dir, err)
	}
	return hosted.NewPartition(spec.Name, spec.ID, index, dir, rep, settings, n.log), nil
}

// partition returns the open local partition, if any.
func (n *Node) partition(topic string, index int32) *localPartition {
	return n.parts.Get(topic, index)
}

// newPartitionSet is the node's set of open partitions (hosted.Set), over
// its catalog: it hosts every partition the catalog places here, and drops
// the ones the catalog says are gone (dropReason) once their group no
// longer counts this replica (stillVoting).
func (n *Node) newPartitionSet() *hosted.Set[TopicSpec] {
	return hosted.NewSet(hosted.SetConfig[TopicSpec]{
		Wanted: func() map[hosted.Key]TopicSpec {
			want := make(map[hosted.Key]TopicSpec)
			for _, spec := range n.catalog.Topics() {
				for i := range spec.Replicas {
					if spec.Hosts(int32(i), n.cfg.NodeID) {
						want[hosted.Key{Topic: spec.Name, Partition: int32(i)}] = spec
					}
				}
			}
			return want
		},
		ID:      func(spec TopicSpec) TopicID { return spec.ID },
		Verdict: n.partitionVerdict,
		Preferred: func(spec TopicSpec, index int32) []int32 {
			return spec.Preferred(index)
		},
		Open: n.openPartition,
		Quarantine: func(dir, why string, fields logrus.Fields) error {
			_, err := n.quarantine.Move(dir, why, fields)
			return err
		},
		Retry:  func() { n.catalog.Signal() },
		Repair: n.repairConfig(),
		Log:    n.log,
	})
}

// partitionVerdict is what becomes of open partition p the catalog does
// not place here: why it may go (dropReason), and whether it is kept
// meanwhile because its group still counts this replica (node/moves: StillVoting).
// Called by the set's reconcile, under its plan lock.
func (n *Node) partitionVerdict(p *localPartition) hosted.Verdict[TopicSpec] {
	why := n.dropReason(p.Topic, p.Index, p.TopicID)
	if why == "" {
		return hosted.Verdict[TopicSpec]{}
	}
	v := hosted.Verdict[TopicSpec]{Why: why}
	if why == reasonNotReplica && n.stillVoting(p) {
		// The catalog's word against the group's: kept until the group
		// no longer counts this replica. The catalog's list still
		// orders the voters, so a leader it leaves out hands leadership
		// to one it names.
		v.Keep = true
		if spec, ok := n.catalog.Topic(p.Topic); ok && spec.ID == p.TopicID && p.Index < spec.Partitions {
			v.Ordered, v.Spec = true, spec
		}
	}
	return v
}

// reconcile makes the open partitions match the catalog: it opens every
// partition this node is a replica of and closes and quarantines the ones
// the catalog says are gone (dropPartition). A partition another reconcile
// is opening or dropping is left to it (and looked at again shortly, as the
// other planned from an older catalog); reconcile waits for none of them.
func (n *Node) reconcile() error {
	return n.parts.Reconcile("")
}

// reconcileTopic is reconcile that also waits for topic's partitions that
// another reconcile is opening or dropping, so that on return what the
// catalog says of topic holds here (CreateTopics, CreatePartitions).
func (n *Node) reconcileTopic(topic string) error {
	return n.parts.Reconcile(topic)
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
		topic, index, ok := hosted.ParsePartitionDir(e.Name())
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

// closePartitions closes every open partition at shutdown (hosted.Set's
// Close). Each close makes what its partition wrote durable; what each
// used to record for a quick restart (its log's clean recovery point, its
// group's commit index) goes into one shutdown checkpoint for the data
// dir, written last (node/hosted's shutdown_checkpoint.go), so an idle
// partition's close writes nothing.
func (n *Node) closePartitions() error {
	return n.parts.Close(n.cfg.DataDir, n.shutdownPoints)
}

// mendStopped reopens every local replica whose group stopped (a write
// its disk refused), and opens again any partition of this node a failed
// reopen left closed (node/hosted's mend.go).
func (n *Node) mendStopped() {
	n.parts.Mend(func(stopped int) {
		n.metrics.SetGauge([]string{"replication", "stopped_replicas"}, float32(stopped))
	})
}

// localPartitions returns a snapshot of the open partitions.
func (n *Node) localPartitions() []*localPartition {
	return n.parts.All()
}

// tierHosted are the open partitions as node/tier sees them.
func (n *Node) tierHosted() []tier.Hosted {
	parts := n.localPartitions()
	out := make([]tier.Hosted, 0, len(parts))
	for _, p := range parts {
		out = append(out, tier.Hosted{Dir: p.Dir, Topic: p.Topic, Index: p.Index, Source: p.Replica,
			TxnIndexPath: filepath.Join(p.Dir, hosted.TxnIndexFile), Settings: p.CurrentSettings})
	}
	return out
}

// restorePartition restores a new partition of a topic with
// remote.storage.recovery from the store (node/tier's restore.go), when
// this replica starts its group afresh: no Raft state and an empty log.
func (n *Node) restorePartition(dir, topic string, index int32, log *partition.Log) error {
	started, err := raftlog.HasState(dir)
	if err != nil || started || log.EndOffset() > 0 {
		return err
	}
	_, err = n.tier.Restore(dir, topic, index, log)
	return err
}

// remote is p's remote side in the store (node/tier), below its local start.
func (n *Node) remote(p *localPartition) tier.View {
	return n.tier.View(p.Dir, p.Topic, p.Index, p.Replica)
}

// leadership is partition index of spec's leader, leader epoch, ISR and
// offline replicas as Metadata and DescribeTopicPartitions report them:
// the replica's where this node hosts the partition, else the cluster view
// (alive: the brokers alive) with the epoch unknown (-1).
func (n *Node) leadership(spec TopicSpec, index int32, alive func(int32) bool) replica.State {
	if p := n.hostedPartition(spec.Name, index, spec.ID); p != nil {
		return p.Replica.State()
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
