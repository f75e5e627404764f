package topics

import (
	"errors"
	"fmt"
	"maps"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/topicconfig"
)

// Alterations of a live topic (CreatePartitions, AlterConfigs,
// IncrementalAlterConfigs): the membership catalog replaces the topic's
// entry under the same id with a newer Lamport time, so every node keeps the
// partitions it holds, opens the ones added and applies the new configs when
// gossip brings the entry.

// MaxPartitions bounds a topic's partition count: every partition is a
// directory and open files.
const MaxPartitions = 10_000

// Why an alteration is refused, each a Refusal's Reason (beside
// ErrUnknownTopic and ErrReplicationFactor).
var (
	ErrInvalidName       = errors.New("invalid topic name")
	ErrInternalTopic     = errors.New("internal topic")
	ErrInvalidPartitions = errors.New("invalid partitions")
	ErrInvalidAssignment = errors.New("invalid replica assignment")
	ErrInvalidConfig     = errors.New("invalid config")
	ErrInvalidRequest    = errors.New("invalid request")
	// ErrUnavailable: what the create needs is not there yet; retry.
	ErrUnavailable = errors.New("not available")
	// ErrChanged: the entry changed under the alteration; retry.
	ErrChanged = errors.New("topic changed meanwhile")
)

// Refusal is an alteration refused: Reason is one of the errors above (or
// ErrUnknownTopic, ErrReplicationFactor, ErrNotDurable: nothing was
// stored, the topic is as it was), Msg what the client is told.
type Refusal struct {
	Reason error
	Msg    string
}

func (r *Refusal) Error() string { return r.Msg }
func (r *Refusal) Unwrap() error { return r.Reason }

func refuse(reason error, msg string) error { return &Refusal{Reason: reason, Msg: msg} }

var errValidateOnly = errors.New("validate only")

// Grow raises topic name's partition count to total (CreatePartitions);
// assignment, when not nil, gives the replicas of each new partition.
// check refuses an entry the broker will not grow (an even replication
// factor). With validateOnly nothing is stored and applied is false.
func (c *Catalog) Grow(name string, total int32, assignment [][]int32, validateOnly bool, check func(*membership.TopicEntry) error) (spec Spec, applied bool, err error) {
	if err := membership.ValidateTopicName(name); err != nil {
		return Spec{}, false, refuse(ErrInvalidName, err.Error())
	}
	if IsInternal(name) {
		// Groups are hashed over the offsets topic's partition count:
		// growing it would move every group's coordinator and lose
		// their offsets (Kafka refuses it too).
		return Spec{}, false, refuse(ErrInternalTopic, "the partition count of internal topic "+name+" cannot change")
	}
	if total > MaxPartitions {
		return Spec{}, false, refuse(ErrInvalidPartitions, fmt.Sprintf("partitions must be at most %d", MaxPartitions))
	}
	add := c.agent.GrowPartitions(total, assignment)
	grow := func(e *membership.TopicEntry) error {
		if err := check(e); err != nil {
			return err
		}
		return add(e)
	}
	change := grow
	if validateOnly {
		change = func(e *membership.TopicEntry) error {
			if err := grow(e); err != nil {
				return err
			}
			return errValidateOnly
		}
	}
	spec, err = c.Alter(name, change)
	switch {
	case errors.Is(err, errValidateOnly):
		return Spec{}, false, nil
	case err != nil:
		return Spec{}, false, alterError(name, err)
	}
	return spec, true, nil
}

// SetConfigs replaces topic name's configs with configs (AlterConfigs, and
// IncrementalAlterConfigs after it has applied its operations), parsed
// over defaults. Unknown keys and bad values are ErrInvalidConfig; nothing
// is stored then. With validateOnly nothing is stored and applied is false.
func (c *Catalog) SetConfigs(name string, configs map[string]string, defaults topicconfig.Defaults, validateOnly bool) (applied bool, err error) {
	if err := membership.ValidateTopicName(name); err != nil {
		return false, refuse(ErrInvalidName, err.Error())
	}
	if _, err := topicconfig.Parse(defaults, configs); err != nil {
		return false, refuse(ErrInvalidConfig, err.Error())
	}
	if _, ok := c.Topic(name); !ok {
		return false, refuse(ErrUnknownTopic, "unknown topic "+name)
	}
	if validateOnly {
		return false, nil
	}
	_, err = c.Alter(name, func(e *membership.TopicEntry) error {
		e.Config = maps.Clone(configs)
		return nil
	})
	if err != nil {
		return false, alterError(name, err)
	}
	return true, nil
}

// alterError is the membership catalog's refusal of an alteration as a
// Refusal.
func alterError(name string, err error) error {
	switch {
	case errors.Is(err, membership.ErrUnknownTopic):
		return refuse(ErrUnknownTopic, "unknown topic "+name)
	case errors.Is(err, membership.ErrInvalidPartitions):
		return refuse(ErrInvalidPartitions, err.Error())
	case errors.Is(err, membership.ErrGrowAssignment):
		return refuse(ErrInvalidAssignment, err.Error())
	case errors.Is(err, membership.ErrInvalidReplicationFactor):
		return refuse(ErrReplicationFactor, err.Error())
	case errors.Is(err, membership.ErrInvalidConfig):
		return refuse(ErrInvalidConfig, err.Error())
	case errors.Is(err, membership.ErrTopicChanged):
		return refuse(ErrChanged, err.Error()+"; retry")
	case errors.Is(err, membership.ErrNotDurable):
		// Not saved, so not applied: the topic is as it was.
		return refuse(ErrNotDurable, err.Error())
	}
	return fmt.Errorf("alter topic %s: %w", name, err)
}
