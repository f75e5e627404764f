package leadership

import (
	"testing"
	"time"

	"github.com/spool-log/spool/membership"
)

// TestDrainEventsTakesTheBacklog: a subscription hands its queue over one
// event at a time; one drain takes a backlog of them, so the leadership
// loop scans once for the lot (it scanned once per event, for as long as
// the backlog of a large settle lasted).
func TestDrainEventsTakesTheBacklog(t *testing.T) {
	ch := make(chan membership.MemberEvent)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for range 500 {
			ch <- membership.MemberEvent{Type: membership.EventUpdate}
		}
	}()
	<-ch
	if got := drainEvents(ch); got == nil {
		t.Fatal("an open channel drained to nil")
	}
	select {
	case <-sent:
	case <-time.After(time.Second):
		t.Fatal("the sender still had events queued after the drain")
	}
	close(ch)
	if drainEvents(ch) != nil {
		t.Fatal("a closed channel is not reported closed")
	}
}
