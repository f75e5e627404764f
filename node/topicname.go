package node

import (
	"fmt"

	"github.com/spool-log/spool/node/group"
)

// isInternalTopic reports the topics the broker writes for itself:
// clients see them (Metadata's IsInternal) but may not produce to or delete
// them.
func isInternalTopic(name string) bool {
	return name == group.TopicName
}

// maxTopicNameLen is Kafka's limit: a topic directory is <topic>-<partition>
// and must fit a 255-byte file name.
const maxTopicNameLen = 249

// ValidateTopicName applies Kafka's topic rules: 1–249 characters from
// [a-zA-Z0-9._-], and not "." or "..". Every name is checked before it can
// become part of a path.
func ValidateTopicName(name string) error {
	if name == "" {
		return fmt.Errorf("topic name is empty")
	}
	if len(name) > maxTopicNameLen {
		return fmt.Errorf("topic name is %d characters, the limit is %d", len(name), maxTopicNameLen)
	}
	if name == "." || name == ".." {
		return fmt.Errorf("topic name %q is not allowed", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return fmt.Errorf("topic name has illegal character %q at %d; allowed are [a-zA-Z0-9._-]", c, i)
		}
	}
	return nil
}
