package share

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Broker is what a node's share groups (Node) need of the node that hosts
// them; node/coord passes an adapter.
type Broker interface {
	NodeID() int32
	Closing() bool
	// Topic is the catalog's word on a topic: its id and partition count.
	Topic(name string) (TopicInfo, bool)
	TopicName(id [16]byte) (string, bool)
	// Internal tells the topics the broker writes for itself, which share
	// groups leave out as Kafka does.
	Internal(name string) bool
	// LeaderOf is the broker that leads topic's partition p, -1 for none.
	LeaderOf(topic string, p int32) int32
	// Led is the log of topic's partition p if this node leads it, else
	// the error a client should get.
	Led(topic string, p int32) (Log, *kerr.Error)
	// Setting and SetSetting are the cluster-wide settings (gossiped)
	// where the groups' configs live (SettingName).
	Setting(name string) (string, bool)
	SetSetting(name, value string) error
	// PostToBroker forwards a request to broker's admin listener.
	PostToBroker(ctx context.Context, broker int32, path string, req any, limit int64, out any) error
}

// StateHost is the store of StateTopic on this node: made on first use,
// after the topic exists, and each partition this node leads loaded into
// it (node/coord's Host).
type StateHost interface {
	Get() (*Store, error)
	// Ensure loads partition p into st if this node leads it; its errors
	// are kerr's (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
	// COORDINATOR_LOAD_IN_PROGRESS).
	Ensure(st *Store, p int32) error
}

// OtherGroups are the classic and consumer groups (node/group), whose ids
// a share group may not take.
type OtherGroups interface {
	// Lookup is whether this node coordinates id (code 0, or the code it
	// answers) and, if it does, whether such a group exists.
	Lookup(id string) (exists bool, code int16)
}
