package topics

import (
	"github.com/spool-log/spool/node/group"
	"github.com/spool-log/spool/node/share"
	"github.com/spool-log/spool/node/txn"
)

// IsInternal reports the topics the broker writes for itself: clients see
// them (Metadata's IsInternal) but may not produce to or delete them.
func IsInternal(name string) bool {
	return name == group.TopicName || name == txn.TopicName || name == share.StateTopic
}
