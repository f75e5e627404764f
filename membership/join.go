package membership

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
)

// Join joins the cluster through addrs (host:port of any members; cfg.Join
// when none are given), retrying with exponential backoff until one answers or
// ctx ends. It returns nil once joined. A refusal for a duplicate broker id or
// name is final and returned at once (errors.Is ErrDuplicateBrokerID /
// ErrDuplicateName). A failure that looks like a gossip-key mismatch says so.
// Health reports the last error until a join succeeds.
func (a *Agent) Join(ctx context.Context, addrs ...string) error {
	if len(addrs) == 0 {
		addrs = a.cfg.Join
	}
	if len(addrs) == 0 {
		return nil
	}
	backoff := a.cfg.JoinBackoffMin
	for attempt := 1; ; attempt++ {
		if a.isShutdown() {
			return errShutdown
		}
		a.guard.clearRefusal()
		a.guard.beginOutgoing()
		// Ignoring the user events from before the join keeps a node
		// that starts with an empty data dir from acting on old topic
		// entries (an old create would open a replica the catalog has
		// since marked led as the start of a new group: node/topics/led.go);
		// the catalog pull at every join brings the current ones.
		n, err := a.serf.Join(addrs, true)
		a.guard.endOutgoing()
		if n > 0 {
			a.setJoinErr(nil)
			a.log.WithFields(logrus.Fields{"seeds": addrs, "contacted": n, "attempt": attempt}).Info("joined cluster")
			return nil
		}
		if refusal := a.guard.lastRefusal(); refusal != nil {
			err = fmt.Errorf("join %v: refused: %w", addrs, refusal)
			a.setJoinErr(err)
			a.log.WithError(err).Error("cannot join cluster")
			return err
		}
		err = a.explainJoinError(addrs, err)
		a.setJoinErr(err)
		wait := backoff + time.Duration(rand.Int64N(int64(backoff)/4+1))
		a.log.WithError(err).WithFields(logrus.Fields{"attempt": attempt, "retry_in": wait}).Warn("join failed; retrying")
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%w (gave up after %d attempts: %v)", err, attempt, ctx.Err())
		case <-a.shutdownCh:
			timer.Stop()
			return errShutdown
		case <-timer.C:
		}
		backoff = min(2*backoff, a.cfg.JoinBackoffMax)
	}
}

// explainJoinError adds the likely cause when a join failure looks like
// encryption: memberlist closes a connection it cannot decrypt (or that is not
// encrypted when it should be), so the joiner only sees the stream end.
func (a *Agent) explainJoinError(addrs []string, err error) error {
	if err == nil {
		return fmt.Errorf("join %v: no member answered", addrs)
	}
	msg := strings.ToLower(err.Error())
	keyish := strings.Contains(msg, "eof") || strings.Contains(msg, "crypt") ||
		strings.Contains(msg, "connection reset") || strings.Contains(msg, "broken pipe")
	if !keyish {
		return fmt.Errorf("join %v: %w", addrs, err)
	}
	if a.serf.EncryptionEnabled() {
		return fmt.Errorf("join %v: %w (the peer closed the connection: it likely uses another gossip key, or none)", addrs, err)
	}
	return fmt.Errorf("join %v: %w (the peer closed the connection: the cluster likely encrypts gossip; pass its gossip key)", addrs, err)
}

func (a *Agent) setJoinErr(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.joinErr = err
}

// RemoveFailed forgets a failed member now instead of after ReconnectTimeout,
// e.g. so that a replacement can take its broker id.
func (a *Agent) RemoveFailed(name string) error {
	if err := a.serf.RemoveFailedNode(name); err != nil {
		return fmt.Errorf("remove failed member %s: %w", name, err)
	}
	return nil
}
