package hosted

import (
	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/scrub"
	"github.com/spool-log/spool/node/topicconfig"
	"github.com/spool-log/spool/node/topics"
	"github.com/spool-log/spool/partition"
)

// Catalog is the topic catalog as the hosted partitions read it
// (node/topics' Catalog).
type Catalog interface {
	Topics() []topics.Spec
	Topic(name string) (topics.Spec, bool)
	// Entry is what the catalog holds for name: the topic (live or the
	// id of the deleted one), whether it is a tombstone, and whether the
	// catalog knows the name at all.
	Entry(name string) (spec topics.Spec, deleted, known bool)
	// Signal wakes the catalog's watchers, as a change does.
	Signal()
	Grow(name string, total int32, assignment [][]int32, validateOnly bool, check func(*membership.TopicEntry) error) (topics.Spec, bool, error)
	SetConfigs(name string, configs map[string]string, defaults topicconfig.Defaults, validateOnly bool) (bool, error)
	Create(spec topics.Spec) (topics.Spec, error)
	Delete(name string) (topics.Spec, error)
}

// Quarantine is where what the node drops goes (datadir.Quarantine).
type Quarantine interface {
	Quarantiner
	Dir() string
}

// Scrub is what an open asks of the scrubber (node/scrub): to be told of
// the cuts recovery makes, and to mark again the damage it found before.
type Scrub interface {
	OnRecoveryCut(topic string, index int32) func(partition.Corruption)
	Recheck(topic string, index int32, log scrub.Recheckable)
}

// HostConfig is what the node hands the partitions it hosts. The funcs
// name parts the node makes only at Start (the agent, the Raft driver, the
// catalog, the mover), read at each use.
type HostConfig struct {
	Self    int32
	DataDir string
	Topic   topicconfig.Defaults
	// RemoteStore is whether this node has an object store (node/tier):
	// without one a create of a topic to restore from the store
	// (remote.storage.recovery=true) is refused, as its partitions could
	// not open here.
	RemoteStore bool
	Files       *partition.FileCache
	Quarantine  Quarantine
	Scrub       Scrub
	// ShutdownPoints are what the last stop left in the shutdown
	// checkpoint, for the partitions to open.
	ShutdownPoints *ShutdownPoints
	Catalog        func() Catalog
	// Alive tells the brokers gossip sees alive.
	Alive  func(int32) bool
	Driver func() *replica.Driver
	// Remote is a partition's tiered storage (node/tier), nil when off;
	// it may restore the log of a new replica from the store first.
	Remote func(RemoteOpen) (replica.RemoteLog, error)
	// StillVoting tells whether p's group still counts this replica
	// (node/moves); called under the set's plan lock.
	StillVoting func(p *Partition) bool
	Repair      *RepairConfig
	// Create is what topic creation needs (create.go).
	Create CreateConfig
	Log    logrus.FieldLogger
}

// Host is the partitions this node hosts over its catalog: the Set of
// open ones, hosting every partition the catalog places here and dropping
// the ones the catalog says are gone (dropReason) once their group no
// longer counts this replica (StillVoting), with how one opens (open.go),
// the orphans' sweep at start (orphans.go) and the upkeep the node runs
// over all of them (upkeep.go).
type Host struct {
	*Set[topics.Spec]
	cfg HostConfig
}

// NewHost is the node's set of open partitions, empty until the first
// Reconcile.
func NewHost(cfg HostConfig) *Host {
	h := &Host{cfg: cfg}
	h.Set = NewSet(SetConfig[topics.Spec]{
		Wanted:  h.wanted,
		ID:      func(spec topics.Spec) topics.TopicID { return spec.ID },
		Verdict: h.verdict,
		Preferred: func(spec topics.Spec, index int32) []int32 {
			return spec.Preferred(index)
		},
		Open: h.open,
		Quarantine: func(dir, why string, fields logrus.Fields) error {
			_, err := cfg.Quarantine.Move(dir, why, fields)
			return err
		},
		Retry:  func() { cfg.Catalog().Signal() },
		Repair: cfg.Repair,
		Log:    cfg.Log,
	})
	return h
}

// wanted is every partition the catalog places here.
func (h *Host) wanted() map[Key]topics.Spec {
	want := make(map[Key]topics.Spec)
	for _, spec := range h.cfg.Catalog().Topics() {
		for i := range spec.Replicas {
			if spec.Hosts(int32(i), h.cfg.Self) {
				want[Key{Topic: spec.Name, Partition: int32(i)}] = spec
			}
		}
	}
	return want
}

// verdict is what becomes of open partition p the catalog does not place
// here: why it may go (dropReason), and whether it is kept meanwhile
// because its group still counts this replica (StillVoting). Called by the
// set's reconcile, under its plan lock.
func (h *Host) verdict(p *Partition) Verdict[topics.Spec] {
	why := h.dropReason(p.Topic, p.Index, p.TopicID)
	if why == "" {
		return Verdict[topics.Spec]{}
	}
	v := Verdict[topics.Spec]{Why: why}
	if why == reasonNotReplica && h.cfg.StillVoting(p) {
		// The catalog's word against the group's: kept until the group
		// no longer counts this replica. The catalog's list still
		// orders the voters, so a leader it leaves out hands leadership
		// to one it names.
		v.Keep = true
		if spec, ok := h.cfg.Catalog().Topic(p.Topic); ok && spec.ID == p.TopicID && p.Index < spec.Partitions {
			v.Ordered, v.Spec = true, spec
		}
	}
	return v
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
func (h *Host) dropReason(topic string, index int32, id topics.TopicID) string {
	cur, deleted, known := h.cfg.Catalog().Entry(topic)
	switch {
	case !known:
		return ""
	case deleted:
		return "topic deleted"
	case cur.ID != id:
		return "topic recreated under a new id"
	case topics.IsInternal(topic):
		return ""
	case index >= cur.Partitions:
		h.cfg.Log.WithFields(logrus.Fields{"topic": topic, "partition": index, "partitions": cur.Partitions}).
			Warn("partition beyond the topic's partition count in the catalog (a growth lost to a concurrent alteration?); kept")
		return ""
	default:
		return reasonNotReplica
	}
}

const reasonNotReplica = "this node is no longer a replica"

// Current returns the open partition of the catalog's incarnation id of
// topic, or nil.
func (h *Host) Current(topic string, index int32, id topics.TopicID) *Partition {
	if p := h.Get(topic, index); p != nil && p.TopicID == id {
		return p
	}
	return nil
}

// RemoteOpen is what HostConfig.Remote is told of a partition opening:
// its directory, topic, index and settings, its local log (open, not yet
// a replica's), and whether the replica starts its group afresh (not a
// joiner), which a restore from the store needs.
type RemoteOpen struct {
	Dir      string
	Topic    string
	Index    int32
	Settings topicconfig.Settings
	Log      *partition.Log
	Fresh    bool
}
