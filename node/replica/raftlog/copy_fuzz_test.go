package raftlog

import (
	"bytes"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// FuzzSnapshotStream feeds a follower what a peer may send as a snapshot
// with its records: the header and the batches are checked, never trusted,
// and whatever is staged is a copy ApplySnapshot accepts.
func FuzzSnapshotStream(f *testing.F) {
	conf := &pb.ConfState{Voters: []uint64{1, 2}}
	{
		l := openCompactedLog(f, f.TempDir())
		s := openStorage(f, l, Options{Bootstrap: conf})
		var ents []*pb.Entry
		for i := uint64(1); i <= 6; i++ {
			ents = append(ents, entry(i, 1, pb.EntryNormal, keyedBatch("k", "v")))
		}
		if err := s.Append(ents); err != nil {
			f.Fatal(err)
		}
		if err := s.SetHardState(&pb.HardState{Term: proto.Uint64(1), Commit: proto.Uint64(6)}); err != nil {
			f.Fatal(err)
		}
		if err := s.Seal(4, conf); err != nil {
			f.Fatal(err)
		}
		var w bytes.Buffer
		if _, err := s.WriteSnapshot(&w); err != nil {
			f.Fatal(err)
		}
		f.Add(w.Bytes())
		f.Add(w.Bytes()[:len(w.Bytes())/2])
	}
	f.Add([]byte{0, 0, 0, 1, 0})
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := bytes.NewReader(stream)
		snap, err := ReadSnapshotHeader(r)
		if err != nil {
			return
		}
		l := openCompactedLog(t, t.TempDir())
		s := openStorage(t, l, Options{Bootstrap: conf})
		if err := s.StageSnapshot(snap, r); err != nil {
			if s.Staged(snap) && NeedsCopy(snap) {
				t.Fatal("a refused copy reported staged")
			}
			return
		}
		if snap.GetMetadata().GetIndex() == 0 {
			return // not newer than the follower's own
		}
		_ = s.ApplySnapshot(snap) // may refuse (e.g. a gap past the end), never panic
	})
}
