package client

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// AlterTopicConfigs changes a topic's configs with IncrementalAlterConfigs:
// each key=value of set is set, each key of deletes returns to the broker
// default, and every other config stays as it is. With validateOnly the
// node checks the change without making it.
func (g Config) AlterTopicConfigs(ctx context.Context, topic string, set, deletes []string, validateOnly bool) error {
	var alters []kadm.AlterConfig
	for _, kv := range set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("%q: want key=value", kv)
		}
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	for _, k := range deletes {
		alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	if len(alters) == 0 {
		return fmt.Errorf("nothing to change: give key=value or --delete key")
	}
	adm, done, err := g.Admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	alter := adm.AlterTopicConfigs
	if validateOnly {
		alter = adm.ValidateAlterTopicConfigs
	}
	resps, err := alter(ctx, alters, topic)
	if err != nil {
		return fmt.Errorf("alter configs of %s: %w", topic, err)
	}
	r, err := resps.On(topic, nil)
	if err != nil {
		return fmt.Errorf("alter configs of %s: %w", topic, err)
	}
	if r.Err != nil {
		return fmt.Errorf("alter configs of %s: %v%s", topic, r.Err, errSuffix(r.ErrMessage))
	}
	return nil
}

// AddPartitions raises a topic's partition count to total with
// CreatePartitions; the count only grows. With validateOnly the node checks
// the change without making it.
func (g Config) AddPartitions(ctx context.Context, topic string, total int, validateOnly bool) error {
	if total < 1 {
		return fmt.Errorf("--total %d: give the new partition count, above the current one", total)
	}
	adm, done, err := g.Admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	update := adm.UpdatePartitions
	if validateOnly {
		update = adm.ValidateUpdatePartitions
	}
	resps, err := update(ctx, total, topic)
	if err != nil {
		return fmt.Errorf("add partitions to %s: %w", topic, err)
	}
	r, ok := resps[topic]
	if !ok {
		return fmt.Errorf("add partitions to %s: no answer for the topic", topic)
	}
	if r.Err != nil {
		return fmt.Errorf("add partitions to %s: %v%s", topic, r.Err, errSuffix(r.ErrMessage))
	}
	return nil
}

// DeleteRecords moves a partition's log start offset up to before (-1: the
// high watermark) with DeleteRecords, and returns the new start.
func (g Config) DeleteRecords(ctx context.Context, topic string, part int32, before int64) (start int64, err error) {
	if before < -1 {
		return 0, fmt.Errorf("--before %d: want an offset, or -1 for the high watermark", before)
	}
	adm, done, err := g.Admin(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: part, At: before})
	resps, err := adm.DeleteRecords(ctx, os)
	if err != nil && !isShardErrors(err) {
		return 0, fmt.Errorf("delete records of %s/%d: %w", topic, part, err)
	}
	r, ok := resps.Lookup(topic, part)
	switch {
	case ok && r.Err != nil:
		return 0, fmt.Errorf("delete records of %s/%d: %w", topic, part, r.Err)
	case !ok && err != nil:
		return 0, fmt.Errorf("delete records of %s/%d: %w", topic, part, err)
	case !ok:
		return 0, fmt.Errorf("delete records of %s/%d: no answer for the partition", topic, part)
	}
	return r.LowWatermark, nil
}
