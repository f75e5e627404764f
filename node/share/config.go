package share

import "time"

// Config bounds and times share groups on this node. Group configs
// (GroupConfig) override the record lock duration, the delivery limit,
// the auto offset reset and the isolation level per group.
type Config struct {
	// MaxInFlight bounds a share partition's window (SPEO - SPSO): records
	// acquired, available for redelivery or acknowledged but not yet
	// below the SPSO. Kafka's group.share.partition.max.record.locks.
	MaxInFlight int
	// MaxRecordsPerFetch bounds the records one ShareFetch acquires on one
	// partition when the request asks for more (or names no limit).
	MaxRecordsPerFetch int
	// MaxFetchBytes bounds the record bytes one ShareFetch reads per
	// partition, whatever the request asks (at least one batch is read).
	MaxFetchBytes int
	// MaxSharePartitions bounds the share partitions (group × partition)
	// this node keeps state for; a fetch that would create one more gets
	// an error for that partition.
	MaxSharePartitions int
	// MaxSessions bounds the share sessions (group × member) on this node:
	// Kafka's group.share.max.share.sessions.
	MaxSessions int
	// MaxSessionPartitions bounds the partitions one share session names.
	MaxSessionPartitions int
	// MaxMembers bounds the members of one share group
	// (group.share.max.size).
	MaxMembers int
	// MaxGroups bounds the share groups one coordinator keeps.
	MaxGroups int
	// HeartbeatInterval is what members are told to heartbeat at
	// (group.share.heartbeat.interval.ms).
	HeartbeatInterval time.Duration
	// SessionTimeout removes a member that has not heartbeaten for this
	// long (group.share.session.timeout.ms).
	SessionTimeout time.Duration
	// Defaults is the group config of a group that sets none.
	Defaults GroupConfig
}

// DefaultConfig is Kafka 4.2's defaults where Kafka has them.
func DefaultConfig() Config {
	return Config{
		MaxInFlight:          2000,
		MaxRecordsPerFetch:   500,
		MaxFetchBytes:        8 << 20,
		MaxSharePartitions:   100_000,
		MaxSessions:          2000,
		MaxSessionPartitions: 10_000,
		MaxMembers:           200,
		MaxGroups:            10_000,
		HeartbeatInterval:    5 * time.Second,
		SessionTimeout:       45 * time.Second,
		Defaults:             DefaultGroupConfig(),
	}
}
