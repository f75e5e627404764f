package raftlog

import (
	"errors"

	"google.golang.org/protobuf/proto"
)

// CommitPoint is a group's commit index as its node recorded it, with
// every other group of the data dir, in one file at shutdown. Raft needs
// term and vote durable before anything is sent (SetHardState writes them
// then); the commit index it can learn again from the leader, so it is
// written lazily, and a node stopping used to write it for every group:
// two fsyncs each. Its entry in the node's file serves the same purpose,
// so a restarted group serves reads up to where it stopped rather than
// wait for a leader: a speed-up, never needed for safety.
type CommitPoint struct {
	Commit uint64
	// LastIndex and LastTerm name the last entry at close; the point is
	// taken only if the log reopens with the same last entry.
	LastIndex, LastTerm uint64
}

// CloseForShutdown is Close for a node's shutdown: the commit index is
// returned for the node's file instead of being written beside the log.
// Term and vote are durable already, unless their last write failed, in
// which case they are written now, as Close does.
func (s *Storage) CloseForShutdown() (CommitPoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.side.close()
	last := s.idx.lastIndex()
	p := CommitPoint{Commit: s.hs.GetCommit(), LastIndex: last, LastTerm: s.idx.term(last)}
	if s.hs.GetTerm() == s.saved.GetTerm() && s.hs.GetVote() == s.saved.GetVote() {
		return p, err
	}
	return p, errors.Join(s.saveHardStateLocked(), err)
}

// takeCommitPoint raises the commit index read from disk to p's, if p was
// taken from this very log. Called by Open, last; the commit on disk stays
// lower until a Close writes it (a commit alone never needs writing).
func (s *Storage) takeCommitPoint(p *CommitPoint) {
	if p == nil {
		return
	}
	last := s.idx.lastIndex()
	if p.LastIndex != last || s.idx.term(last) != p.LastTerm || p.Commit > last || p.Commit < s.idx.snapIndex {
		return
	}
	if p.Commit > s.hs.GetCommit() {
		s.hs.Commit = proto.Uint64(p.Commit)
	}
}
