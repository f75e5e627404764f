package partition

import "time"

// FlushPolicy says when appended bytes are forced to stable storage.
type FlushPolicy int

const (
	// FlushOS leaves writeback to the operating system (Kafka's default);
	// durability then comes from replication. Segments are still fsynced when
	// they roll and on Close.
	FlushOS FlushPolicy = iota
	// FlushEveryAppend fsyncs the segment before Append returns.
	FlushEveryAppend
	// FlushInterval fsyncs at most FlushEvery after an append (flush.ms).
	FlushInterval
)

// Config is one topic's log settings. Start from DefaultConfig: zero values of
// the size and age fields are replaced by their defaults, but a zero
// RetentionAge or RetentionBytes means "keep nothing closed", as in Kafka.
type Config struct {
	// SegmentBytes rolls the active segment before an append that would grow
	// it past this size (segment.bytes). Default 1 GiB; at most 2 GiB - 1,
	// since index positions are 32-bit.
	SegmentBytes int64
	// SegmentAge rolls the active segment once its first batch's timestamp is
	// this old (segment.ms). Default 7 days.
	SegmentAge time.Duration
	// IndexIntervalBytes is how many log bytes pass between sparse offset
	// and time index entries (index.interval.bytes). Default 4096.
	IndexIntervalBytes int
	// RetentionAge deletes closed segments whose newest timestamp is older
	// than this (retention.ms); negative keeps them forever. Default 7 days.
	RetentionAge time.Duration
	// RetentionBytes deletes the oldest closed segments while the log is
	// larger than this (retention.bytes); negative is unlimited (default).
	RetentionBytes int64
	// LogAppendTime stamps every batch with the broker's clock
	// (message.timestamp.type=LogAppendTime) instead of the producer's.
	LogAppendTime bool
	// Flush is the durability policy; FlushEvery is its interval for
	// FlushInterval.
	Flush      FlushPolicy
	FlushEvery time.Duration
	// Clock is the time source for LogAppendTime, rolls and retention;
	// nil means time.Now. Tests inject their own.
	Clock func() time.Time
	// Files bounds the segment files open at once across every Log sharing
	// it (one per node); nil gives the Log a small private cache.
	Files *FileCache

	// Compact marks a compacted topic (cleanup.policy=compact): Append
	// refuses records without a key, and Clean keeps only the newest record
	// of each key. Retention still applies as configured, so a topic that
	// is only compacted sets RetentionAge and RetentionBytes to -1.
	Compact bool
	// DeleteRetention is how long a tombstone (a record with a nil value)
	// survives after the cleaning that first saw it (delete.retention.ms).
	// Default 24 hours; zero lets the next cleaning after that remove them.
	DeleteRetention time.Duration
	// MinCleanableRatio is the share of the closed log that must be dirty
	// (not yet cleaned) before NeedsCleaning says so
	// (min.cleanable.dirty.ratio). Default 0.5.
	MinCleanableRatio float64
	// Codecs compresses and decompresses record payloads for the cleaner
	// and the key check of compacted topics. Without it, compressed
	// batches of a compacted topic are refused and cannot be cleaned.
	Codecs Codecs

	// QuarantineDir receives what recovery cuts from a segment or moves out
	// of the log (quarantine.go), never deleted. Empty means the node's
	// layout: a quarantine directory beside the partition directories.
	QuarantineDir string
	// OnCorruption is told of every cut recovery makes, once the cut bytes
	// are safe in quarantine; the node logs it at ERROR. The package logs
	// nothing itself. Nil drops the reports.
	OnCorruption func(Corruption)
	// ShutdownPoint, read by Open only, is the log's entry in its node's
	// shutdown checkpoint (shutdown_point.go), or nil.
	ShutdownPoint *ShutdownPoint
}

// Defaults, as in Apache Kafka.
const (
	DefaultSegmentBytes       = 1 << 30
	DefaultSegmentAge         = 7 * 24 * time.Hour
	DefaultIndexIntervalBytes = 4096
	DefaultRetentionAge       = 7 * 24 * time.Hour
	DefaultFlushEvery         = time.Second
	DefaultDeleteRetention    = 24 * time.Hour
	DefaultMinCleanableRatio  = 0.5

	// privateFileCacheSize bounds the files of a Log opened without a shared
	// FileCache.
	privateFileCacheSize = 16
	// maxSegmentBytes keeps every position in a segment within the offset
	// index's 32-bit position field.
	maxSegmentBytes = 1<<31 - 1
)

// DefaultConfig returns Kafka's defaults: 1 GiB / 7-day segments, an index
// entry every 4 KiB, 7-day retention with no size bound, CreateTime, and
// writeback left to the OS.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:       DefaultSegmentBytes,
		SegmentAge:         DefaultSegmentAge,
		IndexIntervalBytes: DefaultIndexIntervalBytes,
		RetentionAge:       DefaultRetentionAge,
		RetentionBytes:     -1,
		Flush:              FlushOS,
		FlushEvery:         DefaultFlushEvery,
		DeleteRetention:    DefaultDeleteRetention,
		MinCleanableRatio:  DefaultMinCleanableRatio,
	}
}

// normalized fills defaults for unset sizes and clamps what the on-disk
// format cannot hold.
func (c Config) normalized() Config {
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.SegmentBytes > maxSegmentBytes {
		c.SegmentBytes = maxSegmentBytes
	}
	if c.SegmentAge <= 0 {
		c.SegmentAge = DefaultSegmentAge
	}
	if c.IndexIntervalBytes <= 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if c.FlushEvery <= 0 {
		c.FlushEvery = DefaultFlushEvery
	}
	if c.MinCleanableRatio <= 0 || c.MinCleanableRatio > 1 {
		c.MinCleanableRatio = DefaultMinCleanableRatio
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	return c
}
