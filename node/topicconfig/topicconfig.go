// Package topicconfig is a topic's configuration: the topic configs Spool
// understands, their parsing and checking against the broker defaults, how
// they are described (DescribeConfigs, `spool topic describe`) and what
// they make of a partition's config.
package topicconfig

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/partition"
)

// Keys are the topic configs Spool understands, with their Kafka
// types for DescribeConfigs. Any other key is refused with INVALID_CONFIG
// rather than silently ignored.
var Keys = map[string]kmsg.ConfigType{
	"retention.ms":           kmsg.ConfigTypeLong,
	"retention.bytes":        kmsg.ConfigTypeLong,
	"segment.bytes":          kmsg.ConfigTypeInt,
	"segment.ms":             kmsg.ConfigTypeLong,
	"message.timestamp.type": kmsg.ConfigTypeString,
	"max.message.bytes":      kmsg.ConfigTypeInt,
	"cleanup.policy":         kmsg.ConfigTypeList,
	// Compaction (node/compaction).
	"delete.retention.ms":       kmsg.ConfigTypeLong,
	"min.cleanable.dirty.ratio": kmsg.ConfigTypeDouble,
	// Replication: acks=all needs this many in-sync replicas.
	"min.insync.replicas": kmsg.ConfigTypeInt,
	// Tiered storage (node/tier): closed segments copied to the node's
	// object store; retention.ms/bytes are then the total, these the part
	// kept on local disk (-2: the same as the total, as Kafka's).
	"remote.storage.enable": kmsg.ConfigTypeBoolean,
	"local.retention.ms":    kmsg.ConfigTypeLong,
	"local.retention.bytes": kmsg.ConfigTypeLong,
	// Restore from the store (node/tier's restore.go): a new partition
	// starts from the store's copy of its manifest, as Redpanda's
	// redpanda.remote.recovery.
	"remote.storage.recovery": kmsg.ConfigTypeBoolean,
}

// LocalRetentionAsTotal is local.retention.ms/bytes' default: keep locally
// what the total retention keeps.
const LocalRetentionAsTotal = -2

// Settings is a topic's effective configuration: the broker defaults
// overlaid with the topic's own configs.
type Settings struct {
	RetentionAge    time.Duration
	RetentionBytes  int64
	SegmentBytes    int64
	SegmentAge      time.Duration
	LogAppendTime   bool
	MaxMessageBytes int32
	// cleanup.policy: Delete applies retention.ms/bytes, Compact keeps the
	// newest record per key; "compact,delete" does both.
	Delete, Compact   bool
	DeleteRetention   time.Duration // delete.retention.ms: how long tombstones outlive their first cleaning
	MinCleanableRatio float64       // min.cleanable.dirty.ratio
	// min.insync.replicas: an acks=all produce with fewer in-sync
	// replicas is NOT_ENOUGH_REPLICAS (default 1, as Kafka's).
	MinInsyncReplicas int32
	// RemoteStorage is remote.storage.enable; LocalRetentionAge and
	// LocalRetentionBytes are local.retention.ms and .bytes
	// (LocalRetentionAsTotal: as retention.ms/.bytes; another value <0:
	// unbounded). They count only for a tiered topic.
	RemoteStorage       bool
	LocalRetentionAge   time.Duration
	LocalRetentionBytes int64
	// RemoteRecovery is remote.storage.recovery: each replica that starts
	// a partition's group afresh restores it from the store up to its last
	// uploaded segment (`spool topic restore`). Only with RemoteStorage.
	RemoteRecovery bool
}

// LocalRetention is how much a tiered topic keeps on local disk: its
// local.retention.ms/bytes, each the total's when -2.
func (s Settings) LocalRetention() (time.Duration, int64) {
	age, bytes := s.LocalRetentionAge, s.LocalRetentionBytes
	if age == LocalRetentionAsTotal*time.Millisecond {
		age = s.RetentionAge
	}
	if bytes == LocalRetentionAsTotal {
		bytes = s.RetentionBytes
	}
	return age, bytes
}

// Defaults is the broker-wide default topic configuration.
type Defaults struct {
	RetentionAge    time.Duration // retention.ms; <0 keeps forever
	RetentionBytes  int64         // retention.bytes; <0 means unbounded
	SegmentBytes    int64         // segment.bytes
	SegmentAge      time.Duration // segment.ms
	LogAppendTime   bool          // message.timestamp.type=LogAppendTime
	MaxMessageBytes int32         // max.message.bytes: largest batch accepted
	Flush           partition.FlushPolicy
	FlushEvery      time.Duration // for FlushInterval
}

// Default is the settings of a topic with no configs of its own.
func Default(d Defaults) Settings {
	return Settings{
		RetentionAge:        d.RetentionAge,
		RetentionBytes:      d.RetentionBytes,
		SegmentBytes:        d.SegmentBytes,
		SegmentAge:          d.SegmentAge,
		LogAppendTime:       d.LogAppendTime,
		MaxMessageBytes:     d.MaxMessageBytes,
		Delete:              true,
		DeleteRetention:     partition.DefaultDeleteRetention,
		MinCleanableRatio:   partition.DefaultMinCleanableRatio,
		MinInsyncReplicas:   1,
		LocalRetentionAge:   LocalRetentionAsTotal * time.Millisecond,
		LocalRetentionBytes: LocalRetentionAsTotal,
	}
}

// Parse checks every config a client sent and returns the
// effective settings. Errors name the offending key.
func Parse(d Defaults, configs map[string]string) (Settings, error) {
	s := Default(d)
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := configs[k]
		switch k {
		case "retention.ms":
			n, err := parseLong(k, v, -1)
			if err != nil {
				return s, err
			}
			if n < 0 {
				s.RetentionAge = -1
			} else {
				s.RetentionAge = time.Duration(n) * time.Millisecond
			}
		case "retention.bytes":
			n, err := parseLong(k, v, -1)
			if err != nil {
				return s, err
			}
			s.RetentionBytes = n
		case "segment.bytes":
			n, err := parseLong(k, v, 14)
			if err != nil {
				return s, err
			}
			if n > 1<<31-1 {
				return s, fmt.Errorf("%s=%s: above the int32 limit", k, v)
			}
			s.SegmentBytes = n
		case "segment.ms":
			n, err := parseLong(k, v, 1)
			if err != nil {
				return s, err
			}
			s.SegmentAge = time.Duration(n) * time.Millisecond
		case "message.timestamp.type":
			switch v {
			case "CreateTime":
				s.LogAppendTime = false
			case "LogAppendTime":
				s.LogAppendTime = true
			default:
				return s, fmt.Errorf("%s=%q: want CreateTime or LogAppendTime", k, v)
			}
		case "max.message.bytes":
			n, err := parseLong(k, v, 0)
			if err != nil {
				return s, err
			}
			if n > 1<<31-1 {
				return s, fmt.Errorf("%s=%s: above the int32 limit", k, v)
			}
			s.MaxMessageBytes = int32(n)
		case "cleanup.policy":
			s.Delete, s.Compact = false, false
			for _, p := range strings.Split(v, ",") {
				switch strings.TrimSpace(p) {
				case "delete":
					s.Delete = true
				case "compact":
					s.Compact = true
				default:
					return s, fmt.Errorf("%s=%q: want delete, compact or compact,delete", k, v)
				}
			}
		case "delete.retention.ms":
			n, err := parseLong(k, v, 0)
			if err != nil {
				return s, err
			}
			s.DeleteRetention = time.Duration(n) * time.Millisecond
		case "min.cleanable.dirty.ratio":
			r, err := strconv.ParseFloat(v, 64)
			if err != nil || r < 0 || r > 1 {
				return s, fmt.Errorf("%s=%q: want a number from 0 to 1", k, v)
			}
			s.MinCleanableRatio = r
		case "min.insync.replicas":
			n, err := parseLong(k, v, 1)
			if err != nil {
				return s, err
			}
			if n > 1<<31-1 {
				return s, fmt.Errorf("%s=%s: above the int32 limit", k, v)
			}
			s.MinInsyncReplicas = int32(n)
		case "remote.storage.enable":
			switch v {
			case "true":
				s.RemoteStorage = true
			case "false":
				s.RemoteStorage = false
			default:
				return s, fmt.Errorf("%s=%q: want true or false", k, v)
			}
		case "remote.storage.recovery":
			switch v {
			case "true":
				s.RemoteRecovery = true
			case "false":
				s.RemoteRecovery = false
			default:
				return s, fmt.Errorf("%s=%q: want true or false", k, v)
			}
		case "local.retention.ms":
			n, err := parseLong(k, v, LocalRetentionAsTotal)
			if err != nil {
				return s, err
			}
			s.LocalRetentionAge = time.Duration(n) * time.Millisecond
		case "local.retention.bytes":
			n, err := parseLong(k, v, LocalRetentionAsTotal)
			if err != nil {
				return s, err
			}
			s.LocalRetentionBytes = n
		default:
			return s, fmt.Errorf("unknown topic config %q", k)
		}
	}
	if s.RemoteStorage && s.Compact {
		// As Kafka: a compacted log's closed segments change after upload.
		return s, fmt.Errorf("remote.storage.enable=true: not with cleanup.policy=compact")
	}
	if s.RemoteRecovery && !s.RemoteStorage {
		return s, fmt.Errorf("remote.storage.recovery=true: needs remote.storage.enable=true")
	}
	if s.RemoteStorage {
		age, bytes := s.LocalRetention()
		if s.RetentionAge >= 0 && (age < 0 || age > s.RetentionAge) {
			return s, fmt.Errorf("local.retention.ms=%d: above retention.ms=%d", age.Milliseconds(), s.RetentionAge.Milliseconds())
		}
		if s.RetentionBytes >= 0 && (bytes < 0 || bytes > s.RetentionBytes) {
			return s, fmt.Errorf("local.retention.bytes=%d: above retention.bytes=%d", bytes, s.RetentionBytes)
		}
	}
	return s, nil
}

func parseLong(k, v string, min int64) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: not an integer", k, v)
	}
	if n < min {
		return 0, fmt.Errorf("%s=%d: below the minimum %d", k, n, min)
	}
	return n, nil
}

// PartitionConfig turns settings into the partition package's config, with
// the node's file cache and record codecs.
func (s Settings) PartitionConfig(d Defaults, files *partition.FileCache, codecs partition.Codecs) partition.Config {
	pc := partition.DefaultConfig()
	pc.SegmentBytes = s.SegmentBytes
	pc.SegmentAge = s.SegmentAge
	pc.RetentionAge = s.RetentionAge
	pc.RetentionBytes = s.RetentionBytes
	if s.RemoteStorage {
		// The local log keeps the local part; node/tier applies the total
		// to the remote segments, and the replica holds local retention
		// at what was uploaded.
		pc.RetentionAge, pc.RetentionBytes = s.LocalRetention()
	}
	if !s.Delete {
		pc.RetentionAge, pc.RetentionBytes = -1, -1 // compact only: nothing is deleted by age or size
	}
	pc.Compact = s.Compact
	pc.DeleteRetention = s.DeleteRetention
	pc.MinCleanableRatio = s.MinCleanableRatio
	pc.Codecs = codecs
	pc.LogAppendTime = s.LogAppendTime
	pc.Flush = d.Flush
	pc.FlushEvery = d.FlushEvery
	pc.Files = files
	return pc
}

// Describe lists every topic config with its value and whether the topic set
// it, sorted by name, for DescribeConfigs and `spool topic describe`.
func (s Settings) Describe() []Entry {
	ms := func(d time.Duration) string {
		if d < 0 {
			return "-1"
		}
		return strconv.FormatInt(d.Milliseconds(), 10)
	}
	ts := "CreateTime"
	if s.LogAppendTime {
		ts = "LogAppendTime"
	}
	var policy []string
	if s.Compact {
		policy = append(policy, "compact")
	}
	if s.Delete {
		policy = append(policy, "delete")
	}
	return []Entry{
		{"cleanup.policy", strings.Join(policy, ",")},
		{"local.retention.bytes", strconv.FormatInt(s.LocalRetentionBytes, 10)},
		{"local.retention.ms", localMs(s.LocalRetentionAge)},
		{"delete.retention.ms", ms(s.DeleteRetention)},
		{"max.message.bytes", strconv.FormatInt(int64(s.MaxMessageBytes), 10)},
		{"message.timestamp.type", ts},
		{"min.cleanable.dirty.ratio", strconv.FormatFloat(s.MinCleanableRatio, 'g', -1, 64)},
		{"min.insync.replicas", strconv.FormatInt(int64(s.MinInsyncReplicas), 10)},
		{"remote.storage.enable", strconv.FormatBool(s.RemoteStorage)},
		{"remote.storage.recovery", strconv.FormatBool(s.RemoteRecovery)},
		{"retention.bytes", strconv.FormatInt(s.RetentionBytes, 10)},
		{"retention.ms", ms(s.RetentionAge)},
		{"segment.bytes", strconv.FormatInt(s.SegmentBytes, 10)},
		{"segment.ms", ms(s.SegmentAge)},
	}
}

// localMs is local.retention.ms' value, -2 (as the total) and -1
// (unbounded) kept as they are.
func localMs(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// Entry is one config and its value.
type Entry struct{ Name, Value string }
