package raftlog

import (
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// TestShutdownCommitPoint: CloseForShutdown writes no hard state (term and
// vote are durable already; the commit goes to the node's checkpoint) and
// returns the commit with the last entry; Open with that point restores
// the commit, Open without it (the checkpoint lost, or a crash after the
// restart) starts from the commit last written, and a point that does not
// end where the log does is ignored.
func TestShutdownCommitPoint(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	s := openStorage(t, l, Options{Bootstrap: &pb.ConfState{Voters: []uint64{1, 2, 3}}})
	m := newModel()
	m.appendTo(t, s, 1, 30, threeTerms, "s")
	hs := func(term, vote, commit uint64) *pb.HardState {
		return &pb.HardState{Term: proto.Uint64(term), Vote: proto.Uint64(vote), Commit: proto.Uint64(commit)}
	}
	if err := s.SetHardState(hs(3, 1, 5)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetHardState(hs(3, 1, 25)); err != nil {
		t.Fatal(err)
	}
	p, err := s.CloseForShutdown()
	if err != nil {
		t.Fatal(err)
	}
	if p.Commit != 25 || p.LastIndex != 30 || p.LastTerm != threeTerms(30) {
		t.Fatalf("commit point %+v, want commit 25 at last entry 30 of term %d", p, threeTerms(30))
	}
	if onDisk, err := readHardState(dir); err != nil || !proto.Equal(onDisk, hs(3, 1, 5)) {
		t.Fatalf("hard state on disk %v, %v after CloseForShutdown: want it unwritten (commit 5)", onDisk, err)
	}
	l.Close()

	for _, tc := range []struct {
		name   string
		point  *CommitPoint
		commit uint64
	}{
		{"with the point", &p, 25},
		{"without the point", nil, 5},
		{"a point ending elsewhere", &CommitPoint{Commit: 25, LastIndex: 31, LastTerm: p.LastTerm}, 5},
		{"a point of another term", &CommitPoint{Commit: 25, LastIndex: 30, LastTerm: p.LastTerm + 1}, 5},
		{"a point committing past the log", &CommitPoint{Commit: 31, LastIndex: 30, LastTerm: p.LastTerm}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := openLog(t, dir)
			s := openStorage(t, l, Options{ShutdownCommit: tc.point})
			m.check(t, s, l, 1, 30)
			if got, _, _ := s.InitialState(); !proto.Equal(got, hs(3, 1, tc.commit)) {
				t.Fatalf("hard state %v, want commit %d", got, tc.commit)
			}
			// Close (not for a shutdown) writes the commit the log took, so
			// a start without the node's checkpoint has it too.
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if onDisk, _ := readHardState(dir); onDisk.GetCommit() != tc.commit {
				t.Fatalf("commit %d on disk after Close, want %d", onDisk.GetCommit(), tc.commit)
			}
			if tc.commit != 5 {
				// Back to the state the later cases start from.
				if err := writeFileAtomic(dir, hardStateFile, encodeHardState(hs(3, 1, 5))); err != nil {
					t.Fatal(err)
				}
			}
			l.Close()
		})
	}
}
