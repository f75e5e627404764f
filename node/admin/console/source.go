package console

import "context"

// Source is what the sampler reads from the node, once a second while the
// console is read.
type Source interface {
	// Partitions are the partitions this node leads, with their counters.
	Partitions() []PartitionSample
	// Groups are the first max groups (by name) this node coordinates,
	// and how many it coordinates in all: describing a group costs its
	// shard's lock and an offset scan, so a node with thousands pays for
	// max a second, not for all.
	Groups(max int) (groups []GroupSample, total int)
}

// Peers reaches the consoles of the other live brokers.
type Peers interface {
	// Others are the live brokers but this node.
	Others() []int32
	// Local asks broker id for its Local.
	Local(ctx context.Context, id int32, q Query) (Local, error)
}

// PartitionSample is one led partition as the node counts it now.
type PartitionSample struct {
	Topic     string
	Partition int32
	// Start and End are the log start offset and the high watermark (what
	// consumers can read), Bytes the log's size on disk.
	Start, End, Bytes int64
	// ProducedRecords, ProducedBytes and FetchedBytes are counters since
	// the partition was opened here; the sampler turns them into rates.
	ProducedRecords, ProducedBytes, FetchedBytes int64
}

// GroupSample is one group as its coordinator describes it now.
type GroupSample struct {
	Group string `json:"group"`
	// Type is "classic" or "consumer" (KIP-848).
	Type         string        `json:"type"`
	State        string        `json:"state"`
	ProtocolType string        `json:"protocol_type,omitempty"`
	Protocol     string        `json:"protocol,omitempty"`
	Members      []GroupMember `json:"members"`
	Committed    []Committed   `json:"committed"`
}

// GroupMember is one member of a group and what it is assigned.
type GroupMember struct {
	MemberID   string             `json:"member_id"`
	InstanceID string             `json:"instance_id,omitempty"`
	ClientID   string             `json:"client_id"`
	Host       string             `json:"host"`
	Assignment map[string][]int32 `json:"assignment"`
}

// Committed is a group's committed offset on one partition.
type Committed struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}
