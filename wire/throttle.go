package wire

// Throttling (KIP-219): a handler that finds its client over a quota
// answers at once with the throttle time in the response and mutes the
// connection: wire handles nothing more from it until the time has passed
// after the response was written, so a client that ignores the throttle
// time is held back all the same. While muted, the reader may still read
// ahead up to Config.PipelineDepth requests (and the read-ahead budget);
// handling them waits.

import (
	"context"
	"time"
)

type muteKey struct{}

// Throttle mutes the connection of ctx (a Handler's) for d from when the
// current request's response has been written; a longer mute already set
// stands. It does nothing for a context that is not a connection's.
func Throttle(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	c, ok := ctx.Value(muteKey{}).(*conn)
	if !ok {
		return
	}
	for {
		cur := c.muteFor.Load()
		if cur >= int64(d) || c.muteFor.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// waitMuted holds the worker for the mute a handler set, from now (the
// response is written); closing or shutting down ends it early.
func (c *conn) waitMuted() {
	d := time.Duration(c.muteFor.Swap(0))
	if d <= 0 {
		return
	}
	c.srv.stats.throttled.Add(1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.ctx.Done():
	case <-c.srv.shutdown:
	}
}
