package hosted

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/spool-log/spool/internal/recordbatch/compression"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/replica/raftlog"
	"github.com/spool-log/spool/node/topicconfig"
	"github.com/spool-log/spool/node/topics"
	"github.com/spool-log/spool/partition"
)

// OpenHook, when set (tests), runs at the start of every open: a test holds one there as a slow disk would.
var OpenHook atomic.Pointer[func(topic string, index int32)]

// open opens (creating if needed) one local partition (SetConfig.Open).
func (h *Host) open(spec topics.Spec, index int32) (*Partition, error) {
	if hook := OpenHook.Load(); hook != nil {
		(*hook)(spec.Name, index)
	}
	settings, err := topicconfig.Parse(h.cfg.Topic, spec.Configs)
	if err != nil {
		return nil, fmt.Errorf("topic %s config: %w", spec.Name, err)
	}
	dir := PartitionDir(h.cfg.DataDir, spec.Name, index)
	// Taken first, whatever happens next: it describes the directory as
	// the last stop left it, which this open may change.
	shutdownPoint, written := h.cfg.ShutdownPoints.Take(dir)
	// A directory left by a deleted incarnation of the topic goes first
	// (partition_topic_id.go).
	recordID, err := ClaimDir(dir, spec.Name, spec.ID, index, h.cfg.Quarantine, h.cfg.Log)
	if err != nil {
		return nil, err
	}
	pcfg := settings.PartitionConfig(h.cfg.Topic, h.cfg.Files, compression.Codecs{})
	pcfg.QuarantineDir = h.cfg.Quarantine.Dir()
	pcfg.OnCorruption = h.cfg.Scrub.OnRecoveryCut(spec.Name, index)
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
		if err := RecordTopicID(dir, spec.ID); err != nil {
			log.Close()
			return nil, err
		}
	}
	// Damage an earlier scrub found here is marked again before anything
	// reads the log (node/scrub's findings.go).
	h.cfg.Scrub.Recheck(spec.Name, index, log)
	// A replica with no Raft state starts the group from the partition's
	// replica list, with a vote, only when the group is new: the list
	// names it and the catalog records no leader of the partition yet
	// (node's led.go). The configuration is the one the group began with or
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
	// A replica rebuilt from its peers (repair.go) joins too.
	join := !slices.Contains(spec.Replicas[index], h.cfg.Self) || spec.HadLeader(index) || Rebuilding(dir)
	remote, err := h.cfg.Remote(RemoteOpen{Dir: dir, Topic: spec.Name, Index: index, Settings: settings, Log: log, Fresh: !join}) // node/tier
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("open partition %s: %w", dir, err)
	}
	rep, err := replica.Open(log, replica.Config{Self: h.cfg.Self, Replicas: spec.Preferred(index), Voters: spec.Replicas[index],
		Alive: h.cfg.Alive, Driver: h.cfg.Driver(), Group: replica.GroupKey{Topic: spec.ID, Partition: index}, Join: join,
		ShutdownCommit: shutdownCommit, Remote: remote})
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("open partition %s: %w", dir, err)
	}
	return NewPartition(spec.Name, spec.ID, index, dir, rep, settings, h.cfg.Log), nil
}
