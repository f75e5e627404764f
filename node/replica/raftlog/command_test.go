package raftlog

import (
	"bytes"
	"errors"
	"testing"

	"github.com/spool-log/spool/partition"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// DeleteRecords inside an entry's batch: the entries before it become the
// snapshot, the log start is the offset asked, and the batch holding it
// stays whole for raft, across a reopen; a follower given that snapshot
// takes the start once its log reaches it.
func TestDeleteBeforeInsideABatch(t *testing.T) {
	conf := &pb.ConfState{Voters: []uint64{1, 2}}
	dir := t.TempDir()
	l := openLog(t, dir)
	s := openStorage(t, l, Options{Bootstrap: conf})
	var ents []*pb.Entry
	for i := uint64(1); i <= 10; i++ { // three records each: offsets 3(i-1)..3i-1
		ents = append(ents, entry(i, 1, pb.EntryNormal, recordBatch("a", "b", "c")))
	}
	cmd := entry(11, 1, pb.EntryNormal, DeleteRecordsCommand(13))
	if !IsCommand(cmd) || isData(cmd) {
		t.Fatal("a command entry taken for a batch")
	}
	if err := s.Append(append(ents, cmd)); err != nil {
		t.Fatal(err)
	}
	if l.EndOffset() != 30 {
		t.Fatalf("log end %d: the command took an offset?", l.EndOffset())
	}
	if err := s.DeleteBefore(13, conf); err == nil {
		t.Fatal("deleted records not yet committed")
	}
	if err := s.SetHardState(&pb.HardState{Term: proto.Uint64(1), Commit: proto.Uint64(11)}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteBefore(13, conf); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if fi, _ := s.FirstIndex(); fi != 5 || l.StartOffset() != 13 {
			t.Fatalf("first index %d, log start %d; want 5 and 13", fi, l.StartOffset())
		}
		if _, err := l.Read(12, 1<<20, 30); !errors.Is(err, partition.ErrOffsetOutOfRange) {
			t.Fatalf("read below the new start: %v", err)
		}
		got, err := s.Entries(5, 6, noLimit)
		if err != nil || len(got) != 1 || int64(len(got[0].Data)) != int64(len(recordBatch("a", "b", "c"))) {
			t.Fatalf("entry 5, whose batch holds the new start: %v", err)
		}
		s.Close()
		l.Close()
		l = openLog(t, dir)
		s = openStorage(t, l, Options{})
	}
	snap, _ := s.Snapshot()
	if d, _ := parseSnapData(snap.Data); d.offset != 12 || d.start != 13 || NeedsCopy(snap) {
		t.Fatalf("snapshot data %+v, want entries from 12 and the start at 13", d)
	}

	fl := openLog(t, t.TempDir())
	fs := openStorage(t, fl, Options{Bootstrap: conf})
	if err := fs.ApplySnapshot(snap); err != nil {
		t.Fatal(err)
	}
	if fl.StartOffset() != 12 {
		t.Fatalf("follower starts at %d before it holds the batch", fl.StartOffset())
	}
	rest, err := s.Entries(5, 12, noLimit)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Append(rest); err != nil {
		t.Fatal(err)
	}
	if fl.StartOffset() != 13 || fl.EndOffset() != 30 {
		t.Fatalf("follower log [%d, %d), want [13, 30)", fl.StartOffset(), fl.EndOffset())
	}
	if !bytes.Equal(logBytes(t, fl, 30), logBytes(t, l, 30)) {
		t.Fatal("follower and leader hold other bytes from the new start")
	}
}
