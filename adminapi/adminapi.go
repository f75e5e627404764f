// Package adminapi is the admin HTTP API's JSON bodies: the members, the
// placement, the moves under way, the quarantine and the scrubber, as
// node/admin (and node/scrub, node/datadir) write them and package client
// reads them. Types only, so that the client does not import the broker.
package adminapi

import (
	"time"

	"github.com/spool-log/spool/partition"
)

// MemberInfo is one member as /v1/members shows it.
type MemberInfo struct {
	Name string `json:"name"`
	ID   int32  `json:"id"`
	// Status is alive, joining, failed or left. Joining is alive in
	// gossip but not serving yet, or seeing fewer alive brokers than the
	// node answering: its Metadata would not list them all
	// (membership.MemberServes).
	Status     string `json:"status"`
	KafkaAddr  string `json:"kafka_addr"`
	AdminAddr  string `json:"admin_addr"`
	GossipAddr string `json:"gossip_addr"`
	// RaftAddr is where its replicas' Raft transport listens (empty for a
	// node that does not advertise one).
	RaftAddr      string `json:"raft_addr,omitempty"`
	Rack          string `json:"rack,omitempty"`
	Generation    uint64 `json:"generation"`
	PartitionsLed int    `json:"partitions_led"`
}

// StatusJoining is the Status of a member alive in gossip that does not
// serve yet (MemberInfo.Status).
const StatusJoining = "joining"

// MemberEvent is one line of /v1/members/watch.
type MemberEvent struct {
	Type   string     `json:"type"` // join, fail, leave, update or reap
	Time   time.Time  `json:"time"`
	Member MemberInfo `json:"member"`
}

// PartitionPlacement is one partition as /v1/placement shows it.
type PartitionPlacement struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"` // recorded at creation, succession order
	Leader    int32   `json:"leader"`   // -1: unavailable
	// LeaderEpoch, ISR and Offline are as Metadata reports them from this
	// node (the leader's claim where this node does not lead; epoch -1
	// when unknown).
	LeaderEpoch int32   `json:"leader_epoch"`
	ISR         []int32 `json:"isr"`
	Offline     []int32 `json:"offline"`
	// Preferred is where placement (rendezvous hashing, membership.PlaceTopic)
	// over today's roster would put the replicas; Differs marks a partition whose recorded replicas are
	// not that list (the roster changed since the topic was created, or
	// CreateTopics pinned it with a manual replica assignment).
	Preferred []int32 `json:"preferred"`
	Differs   bool    `json:"differs"`
}

// Move steps, as MoveProgress.Step names them.
const (
	StepAddingLearner = "adding learner"
	StepCatchingUp    = "catching up"
	StepPromoting     = "promoting"
	StepHandingOff    = "handing off leadership"
	StepRemoving      = "removing"
	StepUnknown       = "unknown" // the leader is down, unknown or did not answer
)

// RebalanceStatus is the moves under way, cluster-wide.
type RebalanceStatus struct {
	Paused bool           `json:"paused"`
	Moves  []MoveProgress `json:"moves"`
	// BytesToCopy sums the moves' BytesToCopy, BytesCopied their
	// BytesCopied (moves whose leader is unknown count for nothing).
	BytesToCopy int64 `json:"bytes_to_copy"`
	BytesCopied int64 `json:"bytes_copied"`
}

// MoveProgress is one partition's move.
type MoveProgress struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"` // the list the move started from
	Target    []int32 `json:"target"`
	Adding    []int32 `json:"adding"`
	Removing  []int32 `json:"removing"`
	// Leader is the partition's leader as this node knows it (-1: none).
	Leader int32 `json:"leader"`
	// Step is where the leader stands in the move (Step*).
	Step string `json:"step"`
	// StartedMs is when the move was recorded (Unix ms; 0: unknown).
	StartedMs int64 `json:"started_ms,omitempty"`
	// BytesToCopy is the leader's log in bytes times the replicas being
	// added; BytesCopied what of it they hold, from the offsets the leader
	// has matched on each (bytes in proportion to offsets).
	BytesToCopy int64             `json:"bytes_to_copy"`
	BytesCopied int64             `json:"bytes_copied"`
	NewReplicas []ReplicaProgress `json:"new_replicas,omitempty"`
	// Error says why the progress is unknown.
	Error string `json:"error,omitempty"`
}

// ReplicaProgress is one new replica, as the leader sees it.
type ReplicaProgress struct {
	Broker int32 `json:"broker"`
	// Offset is the offset after the last record the leader matched on it,
	// of EndOffset, the leader's log end.
	Offset    int64 `json:"offset"`
	EndOffset int64 `json:"end_offset"`
	Bytes     int64 `json:"bytes"`
	Snapshot  bool  `json:"snapshot,omitempty"` // receiving the leader's snapshot
	CaughtUp  bool  `json:"caught_up,omitempty"`
}

// QuarantineEntry is one dropped thing in a data directory's quarantine, as
// /v1/quarantine lists it.
type QuarantineEntry struct {
	Name    string    `json:"name"`
	Path    string    `json:"path"`
	Bytes   int64     `json:"bytes"`
	Dropped time.Time `json:"dropped"`
}

// ScrubFinding is a damaged batch (or recovery cut) in one partition.
type ScrubFinding struct {
	Topic     string    `json:"topic"`
	Partition int32     `json:"partition"`
	FoundAt   time.Time `json:"found_at"`
	partition.Corruption
}

// ScrubStatus is what /v1/scrub reports.
type ScrubStatus struct {
	// RateBytesPerSec is the configured rate; 0 means the scrubber is off.
	RateBytesPerSec int64     `json:"rate_bytes_per_sec"`
	Interval        string    `json:"interval"`
	Running         bool      `json:"running"`
	Passes          int       `json:"passes"`
	LastPassStart   time.Time `json:"last_pass_start,omitzero"`
	LastPassEnd     time.Time `json:"last_pass_end,omitzero"`
	// BytesScrubbed and CorruptBatches count since the node started.
	BytesScrubbed  int64 `json:"bytes_scrubbed"`
	CorruptBatches int   `json:"corrupt_batches"`
	// Corrupt is the damaged batches still in the logs, which fetches refuse.
	Corrupt []ScrubFinding `json:"corrupt"`
	// Quarantined is what recovery cut from logs into DATA/quarantine, kept
	// across restarts (DATA/scrub-findings.json), while it is still there
	// (not yet purged or reclaimed).
	Quarantined []ScrubFinding `json:"quarantined"`
	// Repairs are the damaged replicas of replicated partitions rebuilt
	// from their peers (or waiting to be), kept across restarts;
	// RepairsStarted and RepairsDone count since the node started.
	Repairs        []ScrubRepair `json:"repairs"`
	RepairsStarted int           `json:"repairs_started"`
	RepairsDone    int           `json:"repairs_done"`
}

// ScrubRepair is one damaged replica of a replicated partition and its
// rebuild from its peers (node/hosted's repair.go).
type ScrubRepair struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// State is "waiting" (the damage fenced, not served, until the rest of
	// the group holds everything committed: Detail says what it waits
	// for), "rebuilding" (the damaged copy set aside in Quarantine, the
	// replica rejoined with no log and catching up from the leader) or
	// "repaired" (it holds again all it held committed, from its peers).
	State  string `json:"state"`
	Detail string `json:"detail,omitempty"`
	// Damage is what was found damaged in the copy set aside.
	Damage     []partition.Corruption `json:"damage"`
	Quarantine string                 `json:"quarantine,omitempty"`
	// HighWatermark is the damaged replica's before its rebuild: the
	// rebuilt one is repaired once it holds committed records up to it.
	HighWatermark int64     `json:"high_watermark"`
	FoundAt       time.Time `json:"found_at"`
	StartedAt     time.Time `json:"started_at,omitzero"`
	RepairedAt    time.Time `json:"repaired_at,omitzero"`
}

// GossipKeyRequest is the body of POST /v1/gossip-keys/{install,use,remove}.
type GossipKeyRequest struct {
	Key string `json:"key"` // base64 of the 32-byte key
}

// GossipKeyring is the cluster's answer to a gossip key operation
// (membership.KeyringReport): keys are named by fingerprint only.
type GossipKeyring struct {
	Members   int               `json:"members"`
	Responses int               `json:"responses"`
	Errors    int               `json:"errors"`
	Messages  map[string]string `json:"messages,omitempty"`
	Keys      []GossipKeyCount  `json:"keys,omitempty"`
}

// GossipKeyCount is one key of GossipKeyring.
type GossipKeyCount struct {
	Fingerprint string `json:"fingerprint"` // first 8 bytes of its SHA-256, hex
	Nodes       int    `json:"nodes"`       // members holding it
	Primary     int    `json:"primary"`     // members using it as primary
}

// SharePartition is one share partition of a share group as its
// partition's leader keeps it (GET /v1/share-groups/{group} on that
// leader's admin API): the share-partition start offset, the end of the
// in-flight window, and what is in flight between them.
type SharePartition struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	StartOffset int64  `json:"start_offset"`
	EndOffset   int64  `json:"end_offset"`
	// InFlight counts the records of the window not yet acknowledged or
	// archived: acquired by a member, or available for redelivery.
	InFlight int `json:"in_flight"`
	// Acquired counts the records of InFlight a member holds now.
	Acquired int `json:"acquired"`
}
