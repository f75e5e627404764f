package share

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The group configs a share group takes (IncrementalAlterConfigs on a
// GROUP resource), as Kafka 4.2 names them.
const (
	ConfigAutoOffsetReset    = "share.auto.offset.reset"
	ConfigRecordLockDuration = "share.record.lock.duration.ms"
	ConfigDeliveryCountLimit = "share.delivery.count.limit"
	ConfigIsolationLevel     = "share.isolation.level"
)

// ConfigNames lists the group configs, sorted.
var ConfigNames = []string{ConfigAutoOffsetReset, ConfigDeliveryCountLimit, ConfigIsolationLevel, ConfigRecordLockDuration}

// Bounds of the numeric configs. Kafka's brokers default to a 15 s
// minimum lock; Spool allows 1 s so that tests and short jobs see
// redelivery quickly.
const (
	MinRecordLockDuration = time.Second
	MaxRecordLockDuration = time.Hour
	MinDeliveryCountLimit = 2
	MaxDeliveryCountLimit = 10
)

// ErrInvalidConfig refuses a group config name or value.
var ErrInvalidConfig = errors.New("invalid share group config")

// GroupConfig is one share group's configs.
type GroupConfig struct {
	// ResetEarliest starts a new share partition at the log start
	// (share.auto.offset.reset=earliest); else at the high watermark.
	ResetEarliest bool
	// LockDuration is how long an acquired record stays with its member.
	LockDuration time.Duration
	// DeliveryLimit archives a record once it has been delivered this
	// many times and is released again.
	DeliveryLimit int
	// ReadCommitted delivers only committed transactional records; aborted
	// ones are archived without being delivered.
	ReadCommitted bool
}

// DefaultGroupConfig is Kafka's: latest, 30 s, 5, read_uncommitted.
func DefaultGroupConfig() GroupConfig {
	return GroupConfig{LockDuration: 30 * time.Second, DeliveryLimit: 5}
}

// Value is the config's value as DescribeConfigs shows it.
func (c GroupConfig) Value(name string) (string, bool) {
	switch name {
	case ConfigAutoOffsetReset:
		if c.ResetEarliest {
			return "earliest", true
		}
		return "latest", true
	case ConfigRecordLockDuration:
		return strconv.FormatInt(c.LockDuration.Milliseconds(), 10), true
	case ConfigDeliveryCountLimit:
		return strconv.Itoa(c.DeliveryLimit), true
	case ConfigIsolationLevel:
		if c.ReadCommitted {
			return "read_committed", true
		}
		return "read_uncommitted", true
	}
	return "", false
}

// Overrides are a group's configs that differ from the defaults, by name;
// they are what is stored.
type Overrides map[string]string

// Check validates one config's name and value.
func Check(name, value string) error {
	switch name {
	case ConfigAutoOffsetReset:
		if value != "earliest" && value != "latest" {
			return fmt.Errorf("%w: %s must be earliest or latest", ErrInvalidConfig, name)
		}
	case ConfigIsolationLevel:
		if value != "read_committed" && value != "read_uncommitted" {
			return fmt.Errorf("%w: %s must be read_committed or read_uncommitted", ErrInvalidConfig, name)
		}
	case ConfigRecordLockDuration:
		ms, err := strconv.ParseInt(value, 10, 64)
		if err != nil || ms < MinRecordLockDuration.Milliseconds() || ms > MaxRecordLockDuration.Milliseconds() {
			return fmt.Errorf("%w: %s must be %d..%d", ErrInvalidConfig, name, MinRecordLockDuration.Milliseconds(), MaxRecordLockDuration.Milliseconds())
		}
	case ConfigDeliveryCountLimit:
		n, err := strconv.Atoi(value)
		if err != nil || n < MinDeliveryCountLimit || n > MaxDeliveryCountLimit {
			return fmt.Errorf("%w: %s must be %d..%d", ErrInvalidConfig, name, MinDeliveryCountLimit, MaxDeliveryCountLimit)
		}
	default:
		return fmt.Errorf("%w: unknown config %q", ErrInvalidConfig, name)
	}
	return nil
}

// Apply is base with the overrides taken; an override that does not
// check is ignored (the stored value was checked when set).
func (o Overrides) Apply(base GroupConfig) GroupConfig {
	for name, value := range o {
		if Check(name, value) != nil {
			continue
		}
		switch name {
		case ConfigAutoOffsetReset:
			base.ResetEarliest = value == "earliest"
		case ConfigIsolationLevel:
			base.ReadCommitted = value == "read_committed"
		case ConfigRecordLockDuration:
			ms, _ := strconv.ParseInt(value, 10, 64)
			base.LockDuration = time.Duration(ms) * time.Millisecond
		case ConfigDeliveryCountLimit:
			base.DeliveryLimit, _ = strconv.Atoi(value)
		}
	}
	return base
}

// Encode is the overrides as one short string (name=value;...), sorted,
// which fits a cluster setting's value (at most ~120 bytes).
func (o Overrides) Encode() string {
	names := make([]string, 0, len(o))
	for n := range o {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(o[n])
	}
	return b.String()
}

// DecodeOverrides reads what Encode wrote; pairs that do not check are
// dropped.
func DecodeOverrides(s string) Overrides {
	o := Overrides{}
	for _, pair := range strings.Split(s, ";") {
		name, value, ok := strings.Cut(pair, "=")
		if ok && Check(name, value) == nil {
			o[name] = value
		}
	}
	return o
}

// SettingName is the cluster setting a group's overrides are kept under:
// a digest of the group id, since group ids may hold any characters and
// be longer than a setting name.
func SettingName(group string) string {
	sum := sha256.Sum256([]byte(group))
	return "share-group." + hex.EncodeToString(sum[:16])
}
