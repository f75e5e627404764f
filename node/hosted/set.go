package hosted

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
)

// Key names one topic partition.
type Key struct {
	Topic     string
	Partition int32
}

// Verdict is what becomes of an open partition the catalog does not place
// here (or places here as another incarnation of its topic).
type Verdict[S any] struct {
	// Why it may go (closed, then quarantined); "" leaves it open, as it
	// is.
	Why string
	// Keep: it stays open for now, whatever Why says (its Raft group
	// still counts this replica), and is looked at again shortly; with
	// Ordered, Spec orders its replicas.
	Keep    bool
	Ordered bool
	Spec    S
}

// SetConfig is what a Set needs from its owner: the catalog's word, and
// how a partition opens and goes. S is the owner's record of a topic.
type SetConfig[S any] struct {
	// Wanted is every partition the catalog places on this node, with
	// its topic's record; ID is that record's incarnation.
	Wanted func() map[Key]S
	ID     func(S) membership.TopicID
	// Verdict judges an open partition Wanted leaves out, or wants as
	// another incarnation. Wanted and Verdict are called under the plan
	// lock, which also guards whatever state they keep.
	Verdict func(p *Partition) Verdict[S]
	// Preferred is partition index of spec's replicas in preference
	// order, as its replica is told (replica.SetReplicas).
	Preferred func(spec S, index int32) []int32
	// Open opens partition index of spec.
	Open func(spec S, index int32) (*Partition, error)
	// Quarantine moves a dropped partition's directory aside.
	Quarantine func(dir, why string, fields logrus.Fields) error
	// Retry asks for another reconcile (a second after one that left
	// work for later).
	Retry func()
	// Repair, if set, rebuilds damaged replicas of replicated partitions
	// from their peers (Repair, repair.go).
	Repair *RepairConfig
	Log    logrus.FieldLogger
}

// Set is the partitions open on this node, and their reconcile with the
// catalog (Reconcile): it opens every partition the catalog places here
// and closes and quarantines the ones the catalog says are gone.
//
// Locks, outer first: planMu (a reconcile's plan, and Mend's close of
// stopped replicas) -> mu (the open partitions and the claims), and
// planMu -> mend.mu, and repair.mu alone. A partition opens, closes and moves to
// quarantine under neither, claimed in claims meanwhile, so a reconcile
// for one topic never waits on the disk of another's.
type Set[S any] struct {
	cfg    SetConfig[S]
	planMu sync.Mutex
	mu     sync.RWMutex
	parts  map[Key]*Partition
	claims map[Key]chan struct{}
	mend   mendState   // mend.go
	repair repairState // repair.go
}

// NewSet is an empty Set.
func NewSet[S any](cfg SetConfig[S]) *Set[S] {
	return &Set[S]{cfg: cfg, parts: make(map[Key]*Partition), claims: make(map[Key]chan struct{}),
		mend: mendState{stoppedSince: map[*Partition]time.Time{}}}
}

// Get returns the open partition, if any.
func (s *Set[S]) Get(topic string, index int32) *Partition {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.parts[Key{topic, index}]
}

// All returns a snapshot of the open partitions.
func (s *Set[S]) All() []*Partition {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*Partition, 0, len(s.parts))
	for _, p := range s.parts {
		out = append(out, p)
	}
	return out
}

// Reconcile makes the open partitions match the catalog, waiting for the
// partitions of topic ("": none) that another reconcile is opening or
// dropping; the others another reconcile works on are left to it (and
// looked at again shortly, as the other planned from an older catalog).
//
// planMu is held while the catalog is read and the plan made (which
// partitions to drop, open, keep), never while a partition opens, closes or
// moves to quarantine: those run after it, each partition claimed
// meanwhile.
func (s *Set[S]) Reconcile(topic string) error {
	type dropped struct {
		p   *Partition
		why string
	}
	var (
		drop  []dropped
		kept  []*Partition
		opens []Key
		wait  []chan struct{}
		retry bool
		mine  = make(map[Key]chan struct{})
	)
	s.planMu.Lock()
	want := s.cfg.Wanted()
	s.mu.Lock()
	for key, p := range s.parts {
		if spec, ok := want[key]; ok && s.cfg.ID(spec) == p.TopicID {
			kept = append(kept, p)
			continue
		}
		v := s.cfg.Verdict(p)
		if v.Why == "" {
			continue
		}
		if v.Keep {
			// The catalog's word against the group's: kept until the
			// group no longer counts this replica. The catalog's list
			// still orders the voters, so a leader it leaves out hands
			// leadership to one it names.
			if v.Ordered {
				want[key] = v.Spec
			}
			kept = append(kept, p)
			retry = true
			continue
		}
		drop = append(drop, dropped{p, v.Why})
		delete(s.parts, key)
		done := make(chan struct{})
		s.claims[key], mine[key] = done, done
	}
	for key := range want {
		if _, open := s.parts[key]; open {
			continue
		}
		if _, ours := mine[key]; ours {
			opens = append(opens, key) // dropped first, below
			continue
		}
		if _, busy := s.claims[key]; busy {
			retry = true // waited for below if it is topic's
			continue
		}
		done := make(chan struct{})
		s.claims[key], mine[key] = done, done
		opens = append(opens, key)
	}
	for key, done := range s.claims {
		// Another reconcile's open or drop of topic's partitions: the
		// caller wants its outcome (a create, a delete, a growth).
		if _, ours := mine[key]; !ours && key.Topic == topic {
			wait = append(wait, done)
		}
	}
	s.mu.Unlock()
	s.planMu.Unlock()

	finish := func(key Key, p *Partition) {
		s.mu.Lock()
		if p != nil {
			s.parts[key] = p
		}
		if done, ok := mine[key]; ok && s.claims[key] == done {
			delete(s.claims, key)
			close(done)
		}
		s.mu.Unlock()
	}
	// A move's target orders the replicas (its first is the preferred
	// leader); outside the locks, as it waits for the group's round.
	for _, p := range kept {
		if spec, ok := want[Key{p.Topic, p.Index}]; ok {
			p.Replica.SetReplicas(s.cfg.Preferred(spec, p.Index))
		}
	}
	if retry {
		time.AfterFunc(time.Second, s.cfg.Retry)
	}
	reopen := make(map[Key]bool, len(opens))
	for _, key := range opens {
		reopen[key] = true
	}
	for _, d := range drop {
		p := d.p
		if err := p.Replica.Release(); err != nil {
			s.cfg.Log.WithError(err).WithField("topic", p.Topic).WithField("partition", p.Index).Warn("close dropped partition")
		}
		if err := s.cfg.Quarantine(p.Dir, d.why, logrus.Fields{"topic": p.Topic, "partition": p.Index, "topic_id": p.TopicID.String()}); err != nil {
			// Left in place: the next start looks at it again.
			s.cfg.Log.WithError(err).WithField("topic", p.Topic).WithField("partition", p.Index).Error("quarantine dropped partition")
		}
		if key := (Key{p.Topic, p.Index}); !reopen[key] {
			finish(key, nil)
		}
	}

	// Opens run openWorkers at a time: each is a few fsyncs (the new
	// segment, the Raft state), so one at a time a create of thousands of
	// partitions waits for the disk thousands of times over.
	var (
		errMu    sync.Mutex
		firstErr error
		next     atomic.Int64
		workers  sync.WaitGroup
	)
	for range min(openWorkers, len(opens)) {
		workers.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(opens)); i = next.Add(1) - 1 {
				key := opens[i]
				p, err := s.cfg.Open(want[key], key.Partition)
				if err != nil {
					s.cfg.Log.WithError(err).WithField("topic", key.Topic).WithField("partition", key.Partition).Error("open partition")
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
				}
				finish(key, p)
			}
		})
	}
	workers.Wait()
	for _, done := range wait {
		<-done
	}
	return firstErr
}

// evict takes each of ps that is still open out of the set and closes it
// with closeFn, under the plan lock, so no reconcile plans meanwhile; the
// next Reconcile opens them again (Mend).
func (s *Set[S]) evict(ps []*Partition, closeFn func(*Partition)) {
	s.planMu.Lock()
	defer s.planMu.Unlock()
	for _, p := range ps {
		s.mu.Lock()
		if s.parts[Key{p.Topic, p.Index}] == p {
			delete(s.parts, Key{p.Topic, p.Index})
		}
		s.mu.Unlock()
		closeFn(p)
	}
}

// openWorkers is how many partitions a reconcile opens at once, for the
// reason closeWorkers gives.
const openWorkers = 16

// closeWorkers is how many partitions are closed at once at shutdown: a
// close that has written data is fsyncs, which a file system overlaps (one
// journal commit serves several), so a few at a time cut the wait for
// thousands of partitions without flooding the disk queue.
const closeWorkers = 16

// Close closes every open partition at shutdown, once the partitions a
// reconcile is opening have joined the set (the loops and the listeners
// that start reconciles have stopped). Each close makes what its partition
// wrote durable and flushes its transaction index's checkpoint; what each
// used to record for a quick restart (its log's clean recovery point, its
// group's commit index) goes into one shutdown checkpoint for dataDir,
// written last beside the entries of points no open took, so an idle
// partition's close writes nothing. It returns the first close's error.
func (s *Set[S]) Close(dataDir string, points *ShutdownPoints) error {
	for {
		s.mu.Lock()
		var busy chan struct{}
		for _, done := range s.claims {
			busy = done
			break
		}
		s.mu.Unlock()
		if busy == nil {
			break
		}
		<-busy
	}
	s.mu.Lock()
	parts := s.parts
	s.parts = make(map[Key]*Partition)
	s.mu.Unlock()
	work := make(chan *Partition)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	byDir := points.Untaken(dataDir)
	for range min(closeWorkers, len(parts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				p.Txns.FlushCheckpoint(p.Dir)
				point, err := p.Replica.CloseForShutdown()
				mu.Lock()
				if err == nil {
					byDir[filepath.Base(p.Dir)] = point
				} else if firstErr == nil {
					firstErr = fmt.Errorf("close %s: %w", p.Dir, err)
				}
				mu.Unlock()
			}
		}()
	}
	for _, p := range parts {
		work <- p
	}
	close(work)
	wg.Wait()
	if len(byDir) == 0 {
		return firstErr
	}
	if err := WriteShutdownCheckpoint(dataDir, byDir); err != nil {
		// Only the next start's speed suffers.
		s.cfg.Log.WithError(err).Warn("shutdown checkpoint not written; every partition will recover from its own recovery point")
	}
	return firstErr
}
