package leadership

import (
	"context"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
)

// SyncConfig wires a Syncer to the cluster.
type SyncConfig struct {
	Self  int32
	Table *Table
	// Members lists the members gossip knows (membership.Agent.Members).
	Members func() []membership.Member
	// Fetch GETs a path from a peer's admin listener
	// (membership.HTTPFetch), its body bounded.
	Fetch membership.FetchFunc
	// Interval is how often tags are compared (a few times a second: it
	// costs no network). DropAfter is how long the claims of a broker that
	// is not alive, or whose newer claims cannot be pulled, are kept.
	Interval, DropAfter time.Duration
	// PullTimeout bounds one pull.
	PullTimeout time.Duration
	Log         logrus.FieldLogger
}

// Syncer keeps a Table current: each round it pulls from every alive peer
// whose "lv" tag is ahead of what the table holds, and drops the claims of
// brokers that left at once, and of brokers failed or gone, or unreachable
// while ahead, for longer than DropAfter.
type Syncer struct {
	cfg SyncConfig

	mu       sync.Mutex
	since    map[int32]time.Time // broker -> when it was first seen dead or behind
	inflight map[int32]bool      // brokers being pulled from
	pulls    sync.WaitGroup
}

// NewSyncer returns a Syncer; Run drives it.
func NewSyncer(cfg SyncConfig) *Syncer {
	if cfg.Interval <= 0 {
		cfg.Interval = 250 * time.Millisecond
	}
	if cfg.DropAfter <= 0 {
		cfg.DropAfter = 3 * time.Second
	}
	if cfg.PullTimeout <= 0 {
		cfg.PullTimeout = 5 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	return &Syncer{cfg: cfg, since: map[int32]time.Time{}, inflight: map[int32]bool{}}
}

// Run does a round every Interval until ctx ends, then waits for the
// pulls in flight.
func (s *Syncer) Run(ctx context.Context) {
	defer s.Wait()
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		s.Round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Round compares every alive peer's tag with the table, starts a pull from
// each peer that is ahead and has none in flight (each bounded by
// PullTimeout; Round does not wait for them, so a peer slow to answer,
// e.g. a stopped process gossip has not yet declared failed, delays only
// its own claims), and drops claims kept past DropAfter.
func (s *Syncer) Round(ctx context.Context) {
	now := time.Now()
	alive := map[int32]membership.Member{}
	left := map[int32]bool{}
	for _, m := range s.cfg.Members() {
		switch {
		case m.BrokerID == s.cfg.Self:
		case m.Status == membership.StatusAlive:
			if _, dup := alive[m.BrokerID]; !dup {
				alive[m.BrokerID] = m
			}
		case m.Status == membership.StatusLeft:
			left[m.BrokerID] = true
		}
	}
	for id, m := range alive {
		inc, version, ok := ParseTag(m.Leadership)
		if !ok {
			continue // publishes nothing yet
		}
		hInc, hVersion, held := s.cfg.Table.held(id)
		if held && hInc == inc && hVersion >= version {
			s.clear(id)
			continue
		}
		if !s.begin(id) {
			continue
		}
		s.pulls.Add(1)
		go func() {
			defer s.pulls.Done()
			defer s.end(id)
			if err := s.pull(ctx, m, hInc, hVersion, held && hInc == inc); err != nil {
				s.cfg.Log.WithError(err).WithField("member", m.Name).Debug("pull leadership claims")
				s.mark(id, now)
				return
			}
			s.clear(id)
		}()
	}
	for _, id := range s.cfg.Table.Brokers() {
		_, ok := alive[id]
		if !ok {
			s.mark(id, now)
		}
		// A node that left said so itself: it leads nothing any more.
		// One that failed may only be slow: its claims wait a moment.
		if (!ok && left[id]) || s.expired(id, now) {
			s.cfg.Table.Drop(id)
			s.clear(id)
			s.cfg.Log.WithField("member_broker", id).Info("dropped the leadership claims of a broker that is gone or unreachable")
		}
	}
}

// pull fetches broker m's claims, as a delta from what is held when delta.
func (s *Syncer) pull(ctx context.Context, m membership.Member, inc, version uint64, delta bool) error {
	path := Path
	if delta {
		path += "?" + url.Values{"inc": {strconv.FormatUint(inc, 36)}, "since": {strconv.FormatUint(version, 36)}}.Encode()
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.PullTimeout)
	defer cancel()
	body, err := s.cfg.Fetch(ctx, m, path)
	if err != nil {
		return err
	}
	msg, err := Decode(body)
	if err != nil {
		return err
	}
	if err := s.cfg.Table.Apply(m.BrokerID, msg); err != nil {
		if delta && !msg.Full {
			// Out of step with what is held: start again from the
			// whole set.
			return s.pull(ctx, m, 0, 0, false)
		}
		return err
	}
	return nil
}

// Wait waits for the pulls in flight.
func (s *Syncer) Wait() { s.pulls.Wait() }

// begin notes a pull from id, unless one is in flight already.
func (s *Syncer) begin(id int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight[id] {
		return false
	}
	s.inflight[id] = true
	return true
}

func (s *Syncer) end(id int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, id)
}

func (s *Syncer) mark(id int32, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.since[id]; !ok {
		s.since[id] = now
	}
}

func (s *Syncer) clear(id int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.since, id)
}

func (s *Syncer) expired(id int32, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.since[id]
	return ok && now.Sub(t) >= s.cfg.DropAfter
}
