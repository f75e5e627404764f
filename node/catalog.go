package node

import (
	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/topics"
)

// TopicID is a topic's UUID: membership's (node/topics).
type TopicID = membership.TopicID

// TopicSpec is one topic as the catalog records it (node/topics).
type TopicSpec = topics.Spec
