package node

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/partition"
)

// topicConfigKeys are the topic configs Spool understands, with their Kafka
// types for DescribeConfigs. Any other key is refused with INVALID_CONFIG
// rather than silently ignored.
var topicConfigKeys = map[string]kmsg.ConfigType{
	"retention.ms":           kmsg.ConfigTypeLong,
	"retention.bytes":        kmsg.ConfigTypeLong,
	"segment.bytes":          kmsg.ConfigTypeInt,
	"segment.ms":             kmsg.ConfigTypeLong,
	"message.timestamp.type": kmsg.ConfigTypeString,
	"max.message.bytes":      kmsg.ConfigTypeInt,
	"cleanup.policy":         kmsg.ConfigTypeList,
}

// topicSettings is a topic's effective configuration: the broker defaults
// overlaid with the topic's own configs.
type topicSettings struct {
	RetentionAge    time.Duration
	RetentionBytes  int64
	SegmentBytes    int64
	SegmentAge      time.Duration
	LogAppendTime   bool
	MaxMessageBytes int32
}

func defaultSettings(d TopicDefaults) topicSettings {
	return topicSettings{
		RetentionAge:    d.RetentionAge,
		RetentionBytes:  d.RetentionBytes,
		SegmentBytes:    d.SegmentBytes,
		SegmentAge:      d.SegmentAge,
		LogAppendTime:   d.LogAppendTime,
		MaxMessageBytes: d.MaxMessageBytes,
	}
}

// parseTopicConfigs checks every config a client sent and returns the
// effective settings. Errors name the offending key.
func parseTopicConfigs(d TopicDefaults, configs map[string]string) (topicSettings, error) {
	s := defaultSettings(d)
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
			if v != "delete" {
				return s, fmt.Errorf("%s=%q: only \"delete\" is supported", k, v)
			}
		default:
			return s, fmt.Errorf("unknown topic config %q", k)
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

// partitionConfig turns settings into the partition package's config.
func (s topicSettings) partitionConfig(d TopicDefaults, files *partition.FileCache) partition.Config {
	pc := partition.DefaultConfig()
	pc.SegmentBytes = s.SegmentBytes
	pc.SegmentAge = s.SegmentAge
	pc.RetentionAge = s.RetentionAge
	pc.RetentionBytes = s.RetentionBytes
	pc.LogAppendTime = s.LogAppendTime
	pc.Flush = d.Flush
	pc.FlushEvery = d.FlushEvery
	pc.Files = files
	return pc
}

// describe lists every topic config with its value and whether the topic set
// it, sorted by name, for DescribeConfigs and `spool topic describe`.
func (s topicSettings) describe() []configEntry {
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
	return []configEntry{
		{"cleanup.policy", "delete"},
		{"max.message.bytes", strconv.FormatInt(int64(s.MaxMessageBytes), 10)},
		{"message.timestamp.type", ts},
		{"retention.bytes", strconv.FormatInt(s.RetentionBytes, 10)},
		{"retention.ms", ms(s.RetentionAge)},
		{"segment.bytes", strconv.FormatInt(s.SegmentBytes, 10)},
		{"segment.ms", ms(s.SegmentAge)},
	}
}

type configEntry struct{ Name, Value string }
