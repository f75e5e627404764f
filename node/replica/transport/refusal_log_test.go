package transport

import (
	"errors"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

// A flood of refusals logs a burst, then one line saying how many it left
// out once the window has passed.
func TestRefusalLogBounded(t *testing.T) {
	logger, hook := test.NewNullLogger()
	log := logrus.NewEntry(logger)
	var r refusalLog
	for range 3 * refusalLogBurst {
		r.warn(log, "handshake", errors.New("garbage"))
	}
	if n := len(hook.AllEntries()); n != refusalLogBurst {
		t.Fatalf("%d lines logged for %d refusals, want %d", n, 3*refusalLogBurst, refusalLogBurst)
	}
	r.mu.Lock()
	r.start = r.start.Add(-refusalLogWindow) // the window has passed
	r.mu.Unlock()
	r.warn(log, "bad_key", errors.New("wrong key"))
	last := hook.LastEntry()
	if last.Data["not_logged_before"] != 2*refusalLogBurst || last.Data["reason"] != "bad_key" {
		t.Fatalf("line after the window: %v", last.Data)
	}
}
