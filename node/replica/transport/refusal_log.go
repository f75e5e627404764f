package transport

import (
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// refusalLog bounds the warnings refused connections log: a stranger that
// opens connections in a loop must not flood the log (every refusal is
// still counted in the refused metric). Up to refusalLogBurst refusals are
// logged per refusalLogWindow; the ones past it are summed up in one line
// when the next is logged.
type refusalLog struct {
	mu         sync.Mutex
	start      time.Time
	n          int
	suppressed int
}

const (
	refusalLogWindow = 10 * time.Second
	refusalLogBurst  = 20
)

// warn logs one refusal, or counts it when the window's burst is spent.
func (r *refusalLog) warn(log *logrus.Entry, reason string, err error) {
	now := time.Now()
	r.mu.Lock()
	if now.Sub(r.start) >= refusalLogWindow {
		r.start, r.n = now, 0
	}
	if r.n >= refusalLogBurst {
		r.suppressed++
		r.mu.Unlock()
		return
	}
	r.n++
	suppressed := r.suppressed
	r.suppressed = 0
	r.mu.Unlock()
	e := log.WithError(err).WithField("reason", reason)
	if suppressed > 0 {
		e = e.WithField("not_logged_before", suppressed)
	}
	e.Warn("raft connection refused")
}
