package hosted

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/node/topics"
)

// RemoveOrphans looks at every partition directory at start and
// quarantines those the catalog says are gone (dropReason): what a crash
// between the catalog update and the directory's move of a DeleteTopics
// leaves behind. A directory of a topic the catalog does not know is kept
// where it is, unopened, and logged.
func (h *Host) RemoveOrphans() error {
	entries, err := os.ReadDir(h.cfg.DataDir)
	if err != nil {
		return fmt.Errorf("list data dir: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		topic, index, ok := ParsePartitionDir(e.Name())
		if !ok {
			continue
		}
		dir := filepath.Join(h.cfg.DataDir, e.Name())
		fields := logrus.Fields{"topic": topic, "partition": index, "dir": dir}
		spec, deleted, known := h.cfg.Catalog().Entry(topic)
		if known && !deleted && index < spec.Partitions && spec.Hosts(index, h.cfg.Self) {
			continue
		}
		why := ""
		switch {
		case !known:
			h.cfg.Log.WithFields(fields).Warn("partition directory of a topic the catalog does not know; kept, not served")
			continue
		case deleted:
			why = "topic deleted"
		case topics.IsInternal(topic):
			h.cfg.Log.WithFields(fields).Warn("partition directory of an internal topic this node is not a replica of; kept, not served")
			continue
		case index >= spec.Partitions:
			// Not a deletion for the same incarnation: see dropReason.
			if id, ok := DirTopicID(dir); !ok || id == spec.ID {
				h.cfg.Log.WithFields(fields).Warn("partition directory beyond the topic's partition count in the catalog (a growth lost to a concurrent alteration?); kept, not served")
				continue
			}
			why = "partition of a deleted incarnation of the topic, beyond the current one's partition count"
		default:
			why = "this node is not a replica"
		}
		if _, err := h.cfg.Quarantine.Move(dir, why, fields); err != nil {
			// Left in place, unopened (a full disk may refuse even the
			// quarantine's directory): the next start tries again.
			h.cfg.Log.WithError(err).WithFields(fields).Error("quarantine partition directory")
		}
	}
	return nil
}
