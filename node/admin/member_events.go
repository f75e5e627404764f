package admin

import (
	"context"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/admin/console"
)

// RecordMemberEvents feeds c's timeline with the membership events
// subscribe delivers (the agent's Subscribe), until the agent closes the
// subscription or ctx ends. It wakes only on membership changes.
func (a *API) RecordMemberEvents(ctx context.Context, subscribe func() (<-chan membership.MemberEvent, func()), c *console.Console) {
	events, cancel := subscribe()
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			c.RecordEvent(a.MemberEvent(ev))
		}
	}
}
