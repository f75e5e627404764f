package raftlog

import (
	pb "go.etcd.io/raft/v3/raftpb"
)

// Configuration changes are Raft's own entries, kept in the sidecar with no
// offset like a new leader's empty entry. raft restores the configuration
// of the snapshot (InitialState) only; a replica restarting with applied
// entries after it replays their changes (ConfEntries), since raft does
// not hand back entries it was told are applied.

// IsConfChange says whether e is a configuration change (V1 or V2).
func IsConfChange(e *pb.Entry) bool {
	t := e.GetType()
	return t == pb.EntryConfChange || t == pb.EntryConfChangeV2
}

// ConfEntries are the configuration changes of the entries lo to hi
// (inclusive) still in the log, in index order. The sidecar keeps them in
// memory: no read of the segments.
func (s *Storage) ConfEntries(lo, hi uint64) []*pb.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*pb.Entry
	for _, se := range s.side.ents[s.side.search(max(lo, s.idx.snapIndex+1)):] {
		if se.index > hi {
			break
		}
		if se.typ != pb.EntryConfChange && se.typ != pb.EntryConfChangeV2 {
			continue
		}
		out = append(out, &pb.Entry{Index: new(se.index), Term: new(se.term), Type: se.typ.Enum(), Data: se.data})
	}
	return out
}

// SnapshotIndex is the index of the entry just before the log (the
// snapshot's): 0 for a group whose log holds every entry since it began.
func (s *Storage) SnapshotIndex() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idx.snapIndex
}
