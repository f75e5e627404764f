package group

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// groupWriter orders one group's offset-record appends (commits, offset and
// group deletions). An offset commit lets go of its shard's mutex for the
// disk append, so that the other groups of the shard (their heartbeats,
// joins, commits) do not wait on the disk; the group's writer, held from
// before the commit is checked until it is applied, keeps that group's
// appends reaching the log, and then memory, in one order.
type groupWriter struct {
	mu   sync.Mutex
	refs int // holders and waiters; guarded by shard.mu
}

// lockWriter returns groupID's shard, locked, with the group's writer held.
// The writer is taken first (lock order: groupWriter, then shard.mu), so
// lockWriter lets go of the shard's mutex while it waits for the writer.
// Release both with releaseWriter.
func (c *Coordinator) lockWriter(groupID string) (*shard, *groupWriter, int16) {
	s, code := c.lockShard(groupID)
	if code != 0 {
		return nil, nil, code
	}
	if s.writers == nil {
		s.writers = make(map[string]*groupWriter)
	}
	w := s.writers[groupID]
	if w == nil {
		w = &groupWriter{}
		s.writers[groupID] = w
	}
	w.refs++
	s.mu.Unlock()
	w.mu.Lock()
	s.mu.Lock()
	if s.gone {
		s.releaseWriter(groupID, w)
		s.mu.Unlock()
		return nil, nil, kerr.NotCoordinator.Code
	}
	return s, w, 0
}

// releaseWriter lets go of groupID's writer; called with s.mu held, which
// the caller then releases.
func (s *shard) releaseWriter(groupID string, w *groupWriter) {
	w.refs--
	if w.refs == 0 {
		delete(s.writers, groupID)
	}
	w.mu.Unlock()
}
