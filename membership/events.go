package membership

import (
	"time"

	"github.com/hashicorp/serf/serf"
)

// EventType is the kind of a MemberEvent.
type EventType string

const (
	EventJoin   EventType = "join"
	EventFail   EventType = "fail"
	EventLeave  EventType = "leave"
	EventUpdate EventType = "update" // tags changed (e.g. new roster digest, restart)
	EventReap   EventType = "reap"   // forgotten after ReconnectTimeout/TombstoneTimeout
)

// MemberEvent is one membership change as this node saw it.
type MemberEvent struct {
	Type   EventType `json:"type"`
	Member Member    `json:"member"`
	Time   time.Time `json:"time"`
}

func eventTypeFromSerf(t serf.EventType) (EventType, bool) {
	switch t {
	case serf.EventMemberJoin:
		return EventJoin, true
	case serf.EventMemberFailed:
		return EventFail, true
	case serf.EventMemberLeave:
		return EventLeave, true
	case serf.EventMemberUpdate:
		return EventUpdate, true
	case serf.EventMemberReap:
		return EventReap, true
	}
	return "", false
}

// Subscribe streams membership events seen from now on (for `spool members
// --watch`). Call cancel when done; the channel is closed then, and when the
// agent shuts down. A reader that falls more than Config.WatchQueueLimit
// events behind loses the oldest.
func (a *Agent) Subscribe() (<-chan MemberEvent, func()) {
	return a.memberEvents.subscribe()
}

// WatchTopics streams catalog changes seen from now on, whichever way they
// arrived (local call, user event, anti-entropy). The node opens or deletes
// local partitions on them: call WatchTopics first, then read Topics to catch
// up, and apply changes idempotently by topic id.
func (a *Agent) WatchTopics() (<-chan TopicChange, func()) {
	return a.topicEvents.subscribe()
}
