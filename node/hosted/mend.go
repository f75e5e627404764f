package hosted

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
)

// Mending: a replica whose Raft group stopped on a write its disk refused
// (a full disk: ENOSPC; an I/O error) is closed and opened again from disk,
// as a restart of the node would, but for that partition alone and without
// an operator: the open walks the log and cuts what a failed write left,
// and the group rejoins from its durable state, then catches up from its
// leader. Kafka takes a failed log directory back only on a restart; a
// full disk here mends itself once space is back. Until then the reopen
// fails (or the group stops again) and is tried again every mendInterval;
// the replica is reported meanwhile (/readyz, the
// spool_replication_stopped_replicas gauge, a log line per attempt).

// MendInterval is how often stopped replicas are looked for (the owner
// calls Mend this often), and how long one stays stopped before a reopen
// is tried.
const MendInterval = 5 * time.Second

// mendState is Mend's: when each stopped replica was first seen stopped
// (under mu), whether a reopen left a partition closed, and how many
// replicas are closed to be reopened, not yet open.
type mendState struct {
	mu           sync.Mutex
	stoppedSince map[*Partition]time.Time
	missing      atomic.Bool
	mending      atomic.Int64
}

// Mend reopens every replica of the set whose group stopped, and opens
// again any partition a failed reopen left closed; report is told how many
// replicas are stopped first (a gauge).
func (s *Set[S]) Mend(report func(stopped int)) {
	m := &s.mend
	stopped := 0
	var mend []*Partition
	now := time.Now()
	m.mu.Lock()
	// Rebuilt each pass, so a partition dropped while stopped is forgotten.
	since := make(map[*Partition]time.Time, len(m.stoppedSince))
	for _, p := range s.All() {
		if p.Replica.Stopped() == nil {
			continue
		}
		stopped++
		first, seen := m.stoppedSince[p]
		if !seen {
			first = now
		}
		since[p] = first
		if now.Sub(first) >= MendInterval {
			mend = append(mend, p)
		}
	}
	m.stoppedSince = since
	m.mu.Unlock()
	report(stopped)
	if len(mend) == 0 && !m.missing.Load() {
		return
	}
	m.mending.Store(int64(len(mend)))
	defer m.mending.Store(0)
	// Out of the set and closed under the plan lock, so no reconcile
	// plans meanwhile.
	s.evict(mend, func(p *Partition) {
		log := s.cfg.Log.WithFields(logrus.Fields{"topic": p.Topic, "partition": p.Index})
		log.WithError(p.Replica.Stopped()).Warn("replica stopped on a write error: reopening it from disk")
		if err := p.Replica.Close(); err != nil {
			log.WithError(err).Warn("closing the stopped replica")
		}
		m.mu.Lock()
		delete(m.stoppedSince, p)
		m.mu.Unlock()
	})
	// Opens what was just closed, and what an earlier failed open left out.
	if err := s.Reconcile(""); err != nil {
		m.missing.Store(true)
		s.cfg.Log.WithError(err).Warn("reopening stopped replicas failed; trying again later")
		return
	}
	m.missing.Store(false)
	for _, p := range mend {
		s.cfg.Log.WithFields(logrus.Fields{"topic": p.Topic, "partition": p.Index}).Info("stopped replica reopened")
	}
}

// Stopped counts the replicas of the set whose group is stopped, or that
// are being reopened.
func (s *Set[S]) Stopped() int {
	c := int(s.mend.mending.Load())
	for _, p := range s.All() {
		if p.Replica.Stopped() != nil {
			c++
		}
	}
	return c
}

// Missing tells whether a reopen left a partition closed (until a later
// Mend opens it).
func (s *Set[S]) Missing() bool {
	return s.mend.missing.Load()
}
