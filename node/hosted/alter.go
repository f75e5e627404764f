package hosted

import (
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
)

// Alterations of a live topic made on this node: stored in the catalog
// (node/topics: Grow, SetConfigs, their refusals typed there), then applied
// to the partitions open here at once rather than when the catalog's
// signal comes round.

// GrowTopic raises topic name's partition count to total
// (CreatePartitions; node/topics' Grow) and opens the new partitions this
// node hosts before it returns.
func (h *Host) GrowTopic(name string, total int32, assignment [][]int32, validateOnly bool, check func(*membership.TopicEntry) error) error {
	spec, applied, err := h.cfg.Catalog().Grow(name, total, assignment, validateOnly, check)
	if err != nil || !applied {
		return err
	}
	if err := h.Reconcile(name); err != nil {
		return fmt.Errorf("open new partitions of %s: %w", name, err)
	}
	h.cfg.Log.WithFields(logrus.Fields{"topic": name, "partitions": spec.Partitions}).Info("topic partitions added")
	return nil
}

// SetTopicConfigs replaces topic name's configs (AlterConfigs,
// IncrementalAlterConfigs; node/topics' SetConfigs) and gives the open
// partitions their new configs.
func (h *Host) SetTopicConfigs(name string, configs map[string]string, validateOnly bool) error {
	applied, err := h.cfg.Catalog().SetConfigs(name, configs, h.cfg.Topic, validateOnly)
	if err != nil || !applied {
		return err
	}
	h.ApplyConfigs()
	h.cfg.Log.WithFields(logrus.Fields{"topic": name, "configs": configs}).Info("topic configs changed")
	return nil
}
