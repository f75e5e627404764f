package console

import (
	"sync"

	"github.com/spool-log/spool/adminapi"
)

// Events is the last membership events this node saw, for the cluster
// view's timeline: a page opened after a failure still shows it.
type Events struct {
	keep int

	mu     sync.Mutex
	events ring[adminapi.MemberEvent]
}

// NewEvents keeps the last keep events.
func NewEvents(keep int) *Events { return &Events{keep: max(keep, 1)} }

// Add records ev.
func (e *Events) Add(ev adminapi.MemberEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events.add(ev, e.keep)
}

// List is the kept events, oldest first.
func (e *Events) List() []adminapi.MemberEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.events.ordered()
}
