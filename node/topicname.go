package node

import "github.com/spool-log/spool/node/coord"

// isInternalTopic reports the topics the broker writes for itself:
// clients see them (Metadata's IsInternal) but may not produce to or delete
// them.
func isInternalTopic(name string) bool {
	return coord.IsInternalTopic(name)
}
