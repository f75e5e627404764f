package raftlog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/spool-log/spool/partition"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Options configure a Storage.
type Options struct {
	// Bootstrap is the configuration of a new group, recorded as the
	// snapshot at index 0 when the partition has no Raft state yet (the
	// usual way to start a raft group: every member starts with the same
	// voters). Ignored once the state exists.
	Bootstrap *pb.ConfState
	// Sync fsyncs the log before Append returns, as raft's Ready contract
	// needs before messages go out; without it durability is the
	// partition's flush policy.
	Sync bool
	// ShutdownCommit is the group's entry in its node's shutdown
	// checkpoint (shutdown.go), or nil.
	ShutdownCommit *CommitPoint
}

// Storage is raft.Storage on a partition's segment log, plus the writes the
// node makes for each Ready: Append, SetHardState, ApplySnapshot, and
// Compact when retention moves the log start.
type Storage struct {
	log  *partition.Log
	dir  string
	sync bool

	mu    sync.Mutex
	idx   indexMap
	side  *sidecar      // Raft's own entries, which take no offset
	conf  *pb.ConfState // of the snapshot
	hs    *pb.HardState // as raft last set it
	saved *pb.HardState // as on disk
	// staged are the snapshots whose records are staged, by snapshot
	// index, each in its own raft-snapshot-copy-<index> file (copy.go).
	staged map[uint64]stagedCopy
	// floor is a log start DeleteRecords moved past the first entry's
	// offset, into its batch (snapMeta.floor); applied to a log restarted
	// below it once the log reaches it.
	floor int64
}

var _ raft.Storage = (*Storage)(nil)

// Open reads the Raft state beside log and rebuilds the index map by walking
// the batch headers from the snapshot's offset to the log end, with the
// sidecar's entries between them. A log with no
// Raft state starts a new group at index 0 after whatever the log holds
// (records written before replication are below the first entry).
func Open(log *partition.Log, opts Options) (*Storage, error) {
	s := &Storage{log: log, dir: log.Dir(), sync: opts.Sync}
	m, ok, err := readSnapMeta(s.dir)
	if err != nil {
		return nil, fmt.Errorf("open raft log %s: %w", s.dir, err)
	}
	if !ok {
		m = snapMeta{conf: pb.EnsureConfState(proto.CloneOf(opts.Bootstrap)), offset: log.EndOffset()}
		if err := writeFileAtomic(s.dir, snapshotFile, encodeSnapMeta(m)); err != nil {
			return nil, fmt.Errorf("open raft log %s: %w", s.dir, err)
		}
	}
	if s.side, err = openSidecar(s.dir); err != nil {
		return nil, fmt.Errorf("open raft log %s: %w", s.dir, err)
	}
	s.staged = readStagedCopies(s.dir)
	if err := s.settleStart(&m); err != nil {
		return nil, fmt.Errorf("open raft log %s: %w", s.dir, err)
	}
	s.conf = m.conf
	s.floor = m.floor
	s.idx = newIndexMap(m.index, m.term, m.offset)
	if err := s.scan(); err != nil {
		return nil, fmt.Errorf("open raft log %s: %w", s.dir, err)
	}
	if s.saved, err = readHardState(s.dir); err != nil {
		return nil, fmt.Errorf("open raft log %s: %w", s.dir, err)
	}
	if c := s.saved.GetCommit(); c > s.idx.lastIndex() || c < m.index {
		// Above the last index only if the log lost entries it had
		// acknowledged (a flush policy without fsync); raft would panic,
		// and relearns the commit from the leader anyway.
		s.saved.Commit = proto.Uint64(min(max(c, m.index), s.idx.lastIndex()))
	}
	s.hs = proto.CloneOf(s.saved)
	s.takeCommitPoint(opts.ShutdownCommit)
	return s, nil
}

// settleStart finishes an ApplySnapshot a crash interrupted before it
// emptied the log. A log start below the snapshot's offset is left alone:
// it is a Compact interrupted before it moved the start (the next one moves
// it), or records a single-copy log held before it became a Raft log, and
// Open never deletes records.
func (s *Storage) settleStart(m *snapMeta) error {
	start, end := s.log.StartOffset(), s.log.EndOffset()
	switch {
	case m.restart || m.offset > end:
		// The sidecar first: an interrupted ApplySnapshot may have left
		// the entries of the log it replaced.
		if m.restart {
			if err := s.side.dropFrom(0); err != nil {
				return err
			}
		}
		if m.copied {
			if err := s.restartFromCopy(m.index, m.term); err != nil {
				return err
			}
		} else if err := s.log.RestartAt(m.offset); err != nil {
			return err
		}
		if m.restart {
			m.restart, m.copied = false, false
			if err := writeFileAtomic(s.dir, snapshotFile, encodeSnapMeta(*m)); err != nil {
				return err
			}
			return s.removeStaged(m.index)
		}
	case start > m.offset && start > m.floor:
		return fmt.Errorf("log starts at %d, after the Raft snapshot's offset %d: the log start moved without the Raft log, which cannot number its entries", start, m.offset)
	}
	if m.floor > s.log.StartOffset() && m.floor <= s.log.EndOffset() {
		// A DeleteRecords the log had reached, interrupted.
		if _, err := s.log.DeleteRecordsBefore(m.floor); err != nil {
			return err
		}
	}
	return nil
}

// scan adds every batch from the map's end to the log end to the map, and
// the sidecar's entries where they sit between them. Sidecar entries
// sitting past the log end are dropped, durably: their
// batches before them were lost in a crash, so they were never
// acknowledged as following them (the sidecar is synced before any later
// batch is written, so no batch after a lost sidecar entry survives).
// Entries at or below the snapshot (a Compact interrupted before it
// rewrote the sidecar) are removed.
func (s *Storage) scan() error {
	if s.side.search(s.idx.snapIndex+1) > 0 {
		if err := s.side.compact(s.idx.snapIndex); err != nil {
			return err
		}
	}
	side := s.side.ents
	addSide := func(upTo int64) error {
		for len(side) > 0 && side[0].offset <= upTo {
			e := side[0]
			if e.offset != s.idx.end || e.index != s.idx.lastIndex()+1 {
				return fmt.Errorf("sidecar entry %d at offset %d where the entry after index %d starts at %d", e.index, e.offset, s.idx.lastIndex(), s.idx.end)
			}
			if e.term < s.lastTerm() {
				return fmt.Errorf("sidecar entry %d has term %d, below the term %d before it", e.index, e.term, s.lastTerm())
			}
			s.idx.add(e.term, s.idx.end)
			side = side[1:]
		}
		return nil
	}
	end := s.log.EndOffset()
	if s.idx.end < end {
		if err := s.scanBatches(end, addSide); err != nil {
			return err
		}
	}
	if err := addSide(end); err != nil {
		return err
	}
	if len(side) > 0 {
		return s.side.dropFrom(len(s.side.ents) - len(side))
	}
	return nil
}

// scanBatches walks the batch headers from the map's end to end, calling
// before(base) ahead of each batch. It steps over batches a scrub marked
// corrupt (partition's WalkBelowStart): a damaged replica reopened fenced
// still numbers its entries as its peers do.
func (s *Storage) scanBatches(end int64, before func(int64) error) error {
	sl, err := s.log.WalkBelowStart(s.idx.end, end)
	if err != nil {
		return err
	}
	defer sl.Release()
	var hdr [offLastDelta + 4]byte
	for _, r := range sl.Regions {
		br := bufio.NewReaderSize(io.NewSectionReader(r.File, r.Position, r.Length), 64<<10)
		for left := r.Length; left > 0; {
			if _, err := io.ReadFull(br, hdr[:]); err != nil {
				return fmt.Errorf("batch header at offset %d: %w", s.idx.end, err)
			}
			base := int64(binary.BigEndian.Uint64(hdr[:]))
			size := int64(binary.BigEndian.Uint32(hdr[offLength:])) + offEpoch
			epoch := int32(binary.BigEndian.Uint32(hdr[offEpoch:]))
			if err := before(base); err != nil {
				return err
			}
			if base != s.idx.end {
				return fmt.Errorf("batch at offset %d where the entry after index %d starts at %d", base, s.idx.lastIndex(), s.idx.end)
			}
			if oldRaftControl(binary.BigEndian.Uint16(hdr[offAttributes:])) {
				// Transaction markers carry the transactional bit; a
				// control batch without it is one of those Raft's own
				// entries were stored as before the sidecar (an
				// unreleased format).
				return fmt.Errorf("control batch at offset %d: a Raft log of an unreleased format that kept Raft's own entries in the log; it cannot be read", base)
			}
			if term := uint64(epoch); epoch < 0 || term < s.lastTerm() {
				return fmt.Errorf("batch at offset %d has epoch %d, below the term %d before it", base, epoch, s.lastTerm())
			}
			next := base + int64(binary.BigEndian.Uint32(hdr[offLastDelta:])) + 1
			s.idx.add(uint64(epoch), next)
			if _, err := br.Discard(int(size) - len(hdr)); err != nil {
				return fmt.Errorf("batch at offset %d: %w", base, err)
			}
			left -= size
		}
	}
	if s.idx.end != end {
		return fmt.Errorf("entries end at offset %d, the log at %d", s.idx.end, end)
	}
	return nil
}

func (s *Storage) lastTerm() uint64 { return s.idx.term(s.idx.lastIndex()) }

// InitialState implements raft.Storage.
func (s *Storage) InitialState() (*pb.HardState, *pb.ConfState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return proto.CloneOf(s.hs), proto.CloneOf(s.conf), nil
}

// FirstIndex implements raft.Storage.
func (s *Storage) FirstIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idx.firstIndex(), nil
}

// LastIndex implements raft.Storage.
func (s *Storage) LastIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idx.lastIndex(), nil
}

// Term implements raft.Storage: the term of any entry in the log, and of the
// one just before it (the snapshot's).
func (s *Storage) Term(i uint64) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case i < s.idx.snapIndex:
		return 0, raft.ErrCompacted
	case i > s.idx.lastIndex():
		return 0, raft.ErrUnavailable
	}
	return s.idx.term(i), nil
}

// Snapshot implements raft.Storage: the metadata of the entry before the
// log, and as data the offset the log starts at (see the package doc).
func (s *Storage) Snapshot() (*pb.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshotLocked(), nil
}

func (s *Storage) snapshotLocked() *pb.Snapshot {
	offset := s.idx.offset(s.idx.firstIndex())
	return &pb.Snapshot{
		// The records below the first entry are the snapshot's too
		// (copy.go); a start above it is DeleteRecords' (DeleteBefore).
		Data: snapData{offset: offset, start: s.log.StartOffset()}.encode(),
		Metadata: &pb.SnapshotMetadata{
			Index:     proto.Uint64(s.idx.snapIndex),
			Term:      proto.Uint64(s.idx.snapTerm),
			ConfState: proto.CloneOf(s.conf),
		},
	}
}

// Entries implements raft.Storage, reading the batches of [lo, hi) from the
// segments. maxSize bounds the entries' encoded size as raft counts it, but
// the first entry is returned whatever its size.
func (s *Storage) Entries(lo, hi, maxSize uint64) ([]*pb.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lo <= s.idx.snapIndex {
		return nil, raft.ErrCompacted
	}
	if hi > s.idx.lastIndex()+1 || lo > hi {
		return nil, fmt.Errorf("entries [%d, %d) of %s, which holds [%d, %d]: %w", lo, hi, s.dir, s.idx.firstIndex(), s.idx.lastIndex(), raft.ErrUnavailable)
	}
	if lo == hi {
		return nil, nil
	}
	// Batch bytes are less than the entries' encoded size, so this reads
	// at least what maxSize allows. The first entry's batch may begin
	// below a log start DeleteRecords moved into it.
	var buf []byte
	if from, to := s.idx.offset(lo), s.idx.offset(hi); to > from {
		sl, err := s.log.ReadBelowStart(from, int(min(maxSize, math.MaxInt32)), to)
		if err != nil {
			return nil, fmt.Errorf("entries [%d, %d) of %s: %w", lo, hi, s.dir, err)
		}
		buf = make([]byte, sl.Size())
		n := 0
		for _, r := range sl.Regions {
			if _, err := r.File.ReadAt(buf[n:n+int(r.Length)], r.Position); err != nil {
				sl.Release()
				return nil, fmt.Errorf("entries [%d, %d) of %s: %w", lo, hi, s.dir, err)
			}
			n += int(r.Length)
		}
		sl.Release()
	}

	ents := make([]*pb.Entry, 0, min(hi-lo, 1024))
	side := s.side.ents[s.side.search(lo):]
	var size uint64
	for pos, i := 0, lo; i < hi; i++ {
		var e *pb.Entry
		if len(side) > 0 && side[0].index == i {
			// Raft does not change entries' data, so the sidecar's copy
			// is shared.
			e = &pb.Entry{Term: proto.Uint64(side[0].term), Index: proto.Uint64(i), Type: side[0].typ.Enum(), Data: side[0].data}
			side = side[1:]
		} else {
			if pos >= len(buf) {
				break // maxSize cut the read
			}
			if len(buf)-pos < batchHeaderSize {
				return nil, fmt.Errorf("entry %d of %s: %d bytes left, short of a batch header", i, s.dir, len(buf)-pos)
			}
			bsize := int(binary.BigEndian.Uint32(buf[pos+offLength:])) + offEpoch
			if bsize > len(buf)-pos || int64(binary.BigEndian.Uint64(buf[pos:])) != s.idx.offset(i) {
				return nil, fmt.Errorf("entry %d of %s: the batch read does not start at its offset %d", i, s.dir, s.idx.offset(i))
			}
			e = &pb.Entry{Term: proto.Uint64(s.idx.term(i)), Index: proto.Uint64(i), Type: pb.EntryNormal.Enum(), Data: buf[pos : pos+bsize : pos+bsize]}
			pos += bsize
		}
		if size += uint64(proto.Size(e)); len(ents) > 0 && size > maxSize {
			break
		}
		ents = append(ents, e)
	}
	if len(ents) == 0 {
		return nil, fmt.Errorf("entries [%d, %d) of %s: nothing read: %w", lo, hi, s.dir, raft.ErrUnavailable)
	}
	return ents, nil
}

// appendChunk bounds the bytes of one partition append.
const appendChunk = 1 << 20

// Append writes entries to the log, first cutting whatever the log holds from
// the first entry's index on (a diverged suffix; raft only sends entries that
// replace uncommitted ones). Entries at or below the snapshot are skipped.
// Normal entries' data must each be one RecordBatch v2 (or empty); raft may
// keep them, so they are copied before the offset and epoch are stamped.
// Entries that are not record batches go to the sidecar, synced before
// any batch after them is written.
func (s *Storage) Append(ents []*pb.Entry) error {
	if hook := beforeAppend.Load(); hook != nil {
		(*hook)(s.dir)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(ents) > 0 && ents[0].GetIndex() <= s.idx.snapIndex {
		ents = ents[1:]
	}
	if len(ents) == 0 {
		return nil
	}
	first := ents[0].GetIndex()
	if last := s.idx.lastIndex(); first > last+1 {
		return fmt.Errorf("append entry %d to %s, which ends at %d: missing entries", first, s.dir, last)
	} else if first <= last {
		// The log first: a crash between the two leaves sidecar entries
		// past the log end, which Open drops, or at it, which Open keeps
		// as the old log's (a prefix of it); the other way round, a
		// batch would take the index of a sidecar entry cut before it.
		if err := s.log.TruncateTo(s.idx.offset(first)); err != nil {
			return fmt.Errorf("append entry %d to %s: %w", first, s.dir, err)
		}
		if err := s.side.dropFrom(s.side.search(first)); err != nil {
			return fmt.Errorf("append entry %d to %s: %w", first, s.dir, err)
		}
		s.idx.truncate(first)
	}
	// One AppendAt per run of data entries of one term (the epoch is one
	// argument), of at most chunk bytes: the log rolls a segment only
	// between appends, so a long run must not overfill one.
	chunk := int(min(s.log.Config().SegmentBytes/4, appendChunk))
	var buf []byte
	for len(ents) > 0 {
		term := ents[0].GetTerm()
		if term > math.MaxInt32 {
			return fmt.Errorf("append entry %d to %s: term %d exceeds a leader epoch", ents[0].GetIndex(), s.dir, term)
		}
		if e := ents[0]; !isData(e) {
			if e.GetIndex() != first {
				return fmt.Errorf("append to %s: entry %d after %d", s.dir, e.GetIndex(), first-1)
			}
			se := sideEntry{index: first, term: term, typ: e.GetType(), data: bytes.Clone(e.Data), offset: s.idx.end}
			if err := s.side.append(se); err != nil {
				return fmt.Errorf("append entry %d to %s: %w", first, s.dir, err)
			}
			s.idx.add(term, s.idx.end)
			ents, first = ents[1:], first+1
			continue
		}
		n, ends := 0, []int{}
		buf = buf[:0]
		for ; n < len(ents) && isData(ents[n]) && ents[n].GetTerm() == term && (n == 0 || len(buf)+len(ents[n].Data) <= chunk); n++ {
			e := ents[n]
			if e.GetIndex() != first+uint64(n) {
				return fmt.Errorf("append to %s: entry %d after %d", s.dir, e.GetIndex(), first+uint64(n)-1)
			}
			if len(e.Data) < batchHeaderSize || int(binary.BigEndian.Uint32(e.Data[offLength:]))+offEpoch != len(e.Data) {
				return fmt.Errorf("append entry %d to %s: data is not one record batch", e.GetIndex(), s.dir)
			}
			if oldRaftControl(binary.BigEndian.Uint16(e.Data[offAttributes:])) {
				return fmt.Errorf("append entry %d to %s: a control batch that is not a transaction marker", e.GetIndex(), s.dir)
			}
			buf = append(buf, e.Data...)
			ends = append(ends, len(buf))
		}
		if _, err := s.log.AppendAt(buf, s.idx.end, int32(term)); err != nil {
			return fmt.Errorf("append entries %d-%d to %s: %w", first, first+uint64(n)-1, s.dir, err)
		}
		pos := 0
		for _, end := range ends {
			next := int64(binary.BigEndian.Uint64(buf[pos:])) + int64(binary.BigEndian.Uint32(buf[pos+offLastDelta:])) + 1
			s.idx.add(term, next)
			pos = end
		}
		ents, first = ents[n:], first+uint64(n)
	}
	if s.sync {
		if err := s.log.Flush(); err != nil {
			return fmt.Errorf("append to %s: %w", s.dir, err)
		}
	}
	if s.floor > s.log.StartOffset() && s.floor <= s.log.EndOffset() {
		// The batch a snapshot's DeleteRecords start lies in is here.
		if _, err := s.log.DeleteRecordsBefore(s.floor); err != nil {
			return fmt.Errorf("append to %s: log start %d: %w", s.dir, s.floor, err)
		}
	}
	return nil
}

// SetHardState records raft's hard state. A change of term or vote is
// written durably before it returns, as raft requires before any message
// goes out; a commit alone stays in memory until then, or Close.
func (s *Storage) SetHardState(hs *pb.HardState) error {
	if hs == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hs = proto.CloneOf(hs)
	if hs.GetTerm() == s.saved.GetTerm() && hs.GetVote() == s.saved.GetVote() {
		return nil
	}
	return s.saveHardStateLocked()
}

// ChangesTermVote tells whether hs has a term or vote not yet durable,
// which SetHardState must write before any message goes out.
func (s *Storage) ChangesTermVote(hs *pb.HardState) bool {
	if hs == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return hs.GetTerm() != s.saved.GetTerm() || hs.GetVote() != s.saved.GetVote()
}

func (s *Storage) saveHardStateLocked() error {
	if err := writeFileAtomic(s.dir, hardStateFile, encodeHardState(s.hs)); err != nil {
		return fmt.Errorf("save raft hard state of %s: %w", s.dir, err)
	}
	s.saved = proto.CloneOf(s.hs)
	return nil
}

// ApplySnapshot replaces the log with the snapshot's: the snapshot is
// recorded (durably), then the log is emptied and restarted at the offset
// the snapshot's data names, or, if the snapshot holds records, at its log
// start with the records StageSnapshot staged copied in (copy.go). A
// snapshot not newer than the current one is raft.ErrSnapOutOfDate.
func (s *Storage) ApplySnapshot(snap *pb.Snapshot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	md := snap.GetMetadata()
	if md.GetIndex() <= s.idx.snapIndex {
		return raft.ErrSnapOutOfDate
	}
	d, err := parseSnapData(snap.Data)
	if err != nil {
		return fmt.Errorf("apply snapshot %d to %s: %w", md.GetIndex(), s.dir, err)
	}
	m := snapMeta{index: md.GetIndex(), term: md.GetTerm(), conf: pb.EnsureConfState(proto.CloneOf(md.GetConfState())),
		offset: d.offset, restart: true, copied: d.start < d.offset}
	if d.start > d.offset {
		m.floor = d.start // applied once the entries reach it (Append)
	}
	if m.copied && !s.stagedLocked(snap) {
		return fmt.Errorf("apply snapshot %d to %s: its records are not staged", m.index, s.dir)
	}
	if err := writeFileAtomic(s.dir, snapshotFile, encodeSnapMeta(m)); err != nil {
		return fmt.Errorf("apply snapshot %d to %s: %w", m.index, s.dir, err)
	}
	if err := s.side.dropFrom(0); err != nil {
		return fmt.Errorf("apply snapshot %d to %s: %w", m.index, s.dir, err)
	}
	if m.copied {
		err = s.restartFromCopy(m.index, m.term)
	} else {
		err = s.log.RestartAt(m.offset)
	}
	if err != nil {
		return fmt.Errorf("apply snapshot %d to %s: %w", m.index, s.dir, err)
	}
	m.restart, m.copied = false, false
	if err := writeFileAtomic(s.dir, snapshotFile, encodeSnapMeta(m)); err != nil {
		return fmt.Errorf("apply snapshot %d to %s: %w", m.index, s.dir, err)
	}
	if err := s.removeStaged(m.index); err != nil {
		return fmt.Errorf("apply snapshot %d to %s: %w", m.index, s.dir, err)
	}
	s.idx = newIndexMap(m.index, m.term, m.offset)
	s.conf = m.conf
	s.floor = m.floor
	if s.hs.GetCommit() < m.index {
		s.hs.Commit = proto.Uint64(m.index)
	}
	return nil
}

// Compact makes entry i, which must be applied (at most the commit index),
// the snapshot, with conf the configuration as of i: it is recorded durably,
// then the log start moves to the next entry's offset and, if the log's own
// retention by age and size is off (as a Raft log's must be), retention
// deletes the segments wholly below it. Entries up to i are gone for raft
// (ErrCompacted) and for consumers (OFFSET_OUT_OF_RANGE).
func (s *Storage) Compact(i uint64, conf *pb.ConfState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.sealLocked(i, conf); err != nil {
		return err
	}
	if err := s.moveStartLocked(s.idx.offset(i + 1)); err != nil {
		return fmt.Errorf("compact %s to %d: %w", s.dir, i, err)
	}
	return nil
}

// DropSealedBefore moves the log start to offset within the snapshot's
// records (Seal), at most to the first entry's offset: retention of a
// compacted log, whose expired records are no longer Raft entries.
func (s *Storage) DropSealedBefore(offset int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	offset = min(offset, s.idx.offset(s.idx.firstIndex()))
	if offset <= s.log.StartOffset() {
		return nil
	}
	if err := s.moveStartLocked(offset); err != nil {
		return fmt.Errorf("drop records of %s below %d: %w", s.dir, offset, err)
	}
	return nil
}

// DeleteBefore moves the log start to offset, which must be committed
// (DeleteRecords, applied by every replica at its place in the log): the
// last entry ending at or below it becomes the snapshot, with the records
// below deleted; an offset inside the next entry's batch is recorded with
// the snapshot as its floor (the batch stays, whole, for raft; readers
// start at the offset).
func (s *Storage) DeleteBefore(offset int64, conf *pb.ConfState) error {
	return s.DeleteBeforeAt(offset, func(uint64) *pb.ConfState { return conf })
}

// DeleteBeforeAt is DeleteBefore with the configuration as of the entry
// that becomes the snapshot given by confAt: a configuration change may
// lie between it and the commit point.
func (s *Storage) DeleteBeforeAt(offset int64, confAt func(i uint64) *pb.ConfState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if offset <= s.log.StartOffset() {
		return nil
	}
	commit := min(s.hs.GetCommit(), s.idx.lastIndex())
	if offset > s.idx.offset(commit+1) {
		return fmt.Errorf("delete records of %s before %d, past the commit point %d", s.dir, offset, s.idx.offset(commit+1))
	}
	// The largest i in [snapIndex, commit] whose entry ends at or below
	// offset.
	lo, hi := s.idx.snapIndex, commit
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if s.idx.offset(mid+1) <= offset {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if offset > s.idx.offset(lo+1) {
		s.floor = offset
	}
	if lo > s.idx.snapIndex {
		if err := s.sealLocked(lo, confAt(lo)); err != nil {
			return err
		}
	} else if s.floor == offset {
		m := snapMeta{index: s.idx.snapIndex, term: s.idx.snapTerm, conf: s.conf, offset: s.idx.offset(s.idx.firstIndex()), floor: s.floor}
		if err := writeFileAtomic(s.dir, snapshotFile, encodeSnapMeta(m)); err != nil {
			return fmt.Errorf("delete records of %s before %d: %w", s.dir, offset, err)
		}
	}
	if err := s.moveStartLocked(offset); err != nil {
		return fmt.Errorf("delete records of %s before %d: %w", s.dir, offset, err)
	}
	return nil
}

// moveStartLocked moves the log start to offset and deletes the segments
// wholly below it.
func (s *Storage) moveStartLocked(offset int64) error {
	if _, err := s.log.DeleteRecordsBefore(offset); err != nil {
		return err
	}
	// Retention by age or size would move the log start past the
	// snapshot, without this package; with both off it deletes only the
	// segments below the start.
	if cfg := s.log.Config(); cfg.RetentionAge < 0 && cfg.RetentionBytes < 0 {
		if _, err := s.log.EnforceRetention(); err != nil {
			return err
		}
	}
	return nil
}

// Seal makes entry i (applied, at most the commit index) the snapshot, as
// Compact does, but keeps the records: the log start stays, and the
// batches up to i are no longer Raft entries but the snapshot's records,
// which the log cleaner may rewrite (each replica compacts its own log, as
// Kafka's do) and a follower given the snapshot copies (copy.go). The
// memory of the sealed entries' index goes with them.
func (s *Storage) Seal(i uint64, conf *pb.ConfState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sealLocked(i, conf)
}

func (s *Storage) sealLocked(i uint64, conf *pb.ConfState) error {
	if i <= s.idx.snapIndex {
		return raft.ErrCompacted
	}
	if i > s.idx.lastIndex() || i > s.hs.GetCommit() {
		return fmt.Errorf("compact %s to %d: beyond the commit %d or the last entry %d", s.dir, i, s.hs.GetCommit(), s.idx.lastIndex())
	}
	m := snapMeta{index: i, term: s.idx.term(i), conf: pb.EnsureConfState(proto.CloneOf(conf)), offset: s.idx.offset(i + 1), floor: s.floor}
	if err := writeFileAtomic(s.dir, snapshotFile, encodeSnapMeta(m)); err != nil {
		return fmt.Errorf("compact %s to %d: %w", s.dir, i, err)
	}
	s.idx.compact(i)
	s.conf = m.conf
	// A crash before this leaves entries at or below the snapshot in the
	// sidecar, which Open skips.
	if err := s.side.compact(i); err != nil {
		return fmt.Errorf("compact %s to %d: %w", s.dir, i, err)
	}
	return nil
}

// SnapshotOffset is where the Raft log's first entry starts: below it the
// records are the snapshot's (Seal), the part of the log the cleaner may
// rewrite.
func (s *Storage) SnapshotOffset() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idx.offset(s.idx.firstIndex())
}

// NextOffset is the offset after the last data entry at or below i (Raft's
// own entries take no offset): for the commit index, the high watermark.
// i may be the snapshot's index (the log start) but no lower.
func (s *Storage) NextOffset(i uint64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < s.idx.snapIndex {
		return 0, raft.ErrCompacted
	}
	if i > s.idx.lastIndex() {
		return 0, raft.ErrUnavailable
	}
	return s.idx.offset(i + 1), nil
}

// Close saves a commit that advanced since the last save. The log is the
// caller's to close.
func (s *Storage) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.side.close()
	if proto.Equal(s.hs, s.saved) {
		return err
	}
	return errors.Join(s.saveHardStateLocked(), err)
}
