package raftlog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spool-log/spool/internal/recordbatch"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// This file is the half of a snapshot that is records: the log from its
// start up to the first Raft entry. Once Seal has made sealed entries the
// snapshot, the records below it are no longer Raft's (the cleaner may
// rewrite them, as each replica compacts its own log), but they are the
// partition's, so a follower given the snapshot must hold them too. It
// copies them from the leader before it steps the snapshot into raft:
//
//	leader    WriteSnapshot: the snapshot, then the batches in [start, offset)
//	follower  StageSnapshot: validated, into raft-snapshot-copy-<index> (fsynced)
//	follower  ApplySnapshot: the log restarted at start, the staged batches
//	          appended as they are (partition.(*Log).AppendCopied)
//
// A snapshot whose log start is its offset (retention moved the start to
// it: "the log start moved") has no records and needs no copy.

const (
	// copyFile is the staged copies' name, followed by "-" and the
	// snapshot index (%020d); a copy staged by a version before that is
	// the bare name, still read.
	copyFile = "raft-snapshot-copy"
	// maxStaged bounds the copies staged at once. A copy is staged per
	// snapshot index, so that a later snapshot's copy landing before an
	// earlier one is applied (a leader that moved on while this follower
	// was applying) replaces nothing raft may be about to apply; applying
	// one removes it and every older one. Past the bound the oldest goes:
	// raft applies the snapshot it was given last, which is the newest.
	maxStaged = 4
	// maxCopyBatch bounds one batch of a copy (a peer is never trusted);
	// a Raft entry is far smaller (DriverConfig.MaxEntryBytes), and a
	// single-copy log's batches are bounded by max.message.bytes.
	maxCopyBatch = 64 << 20
	// maxSnapshotHeader bounds the snapshot before a copy's batches.
	maxSnapshotHeader = 1 << 20
	// copyChunk is how many bytes of batches one read or append moves.
	copyChunk = 1 << 20
)

// snapData is what a snapshot's Data says: the offset where the entry
// after it starts, and the log start: below it when the snapshot holds
// records, above it when DeleteRecords moved the start into the first
// entry's batch. Encoded as 8 bytes (offset) when they are equal, as
// before snapshots held records, else 16 (offset, start).
type snapData struct{ offset, start int64 }

func (d snapData) encode() []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(d.offset))
	if d.start != d.offset {
		b = binary.BigEndian.AppendUint64(b, uint64(d.start))
	}
	return b
}

func parseSnapData(b []byte) (snapData, error) {
	var d snapData
	switch len(b) {
	case 8:
		d.offset = int64(binary.BigEndian.Uint64(b))
		d.start = d.offset
	case 16:
		d.offset = int64(binary.BigEndian.Uint64(b))
		d.start = int64(binary.BigEndian.Uint64(b[8:]))
	default:
		return d, fmt.Errorf("snapshot data of %d bytes, want 8 or 16", len(b))
	}
	if d.start < 0 || d.offset < 0 {
		return d, fmt.Errorf("snapshot data: log start %d, entries from %d", d.start, d.offset)
	}
	return d, nil
}

// NeedsCopy says whether a follower must copy snap's records from the
// leader (StageSnapshot) before raft may apply it.
func NeedsCopy(snap *pb.Snapshot) bool {
	d, err := parseSnapData(snap.GetData())
	return err == nil && d.start < d.offset
}

// sameSnapshot says whether a and b name the same snapshot.
func sameSnapshot(a, b *pb.Snapshot) bool {
	return a.GetMetadata().GetIndex() == b.GetMetadata().GetIndex() &&
		a.GetMetadata().GetTerm() == b.GetMetadata().GetTerm() && bytes.Equal(a.GetData(), b.GetData())
}

// WriteSnapshot writes the current snapshot and the records it holds to w:
// a 4-byte length, the snapshot (protobuf), then the batches from the log
// start up to the snapshot's offset as the log holds them. The batches are
// read outside the lock; the cleaner may rewrite them meanwhile, which
// changes no record a reader of the copy can tell apart, and retention
// moving the start past them fails the read (the follower asks again).
func (s *Storage) WriteSnapshot(w io.Writer) (*pb.Snapshot, error) {
	s.mu.Lock()
	snap := s.snapshotLocked()
	s.mu.Unlock()
	d, err := parseSnapData(snap.Data)
	if err != nil {
		return nil, err
	}
	b, err := proto.Marshal(snap)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)); err != nil {
		return nil, err
	}
	var buf []byte
	for off := d.start; off < d.offset; {
		sl, err := s.log.Read(off, copyChunk, d.offset)
		if err != nil {
			return nil, fmt.Errorf("snapshot records of %s at %d: %w", s.dir, off, err)
		}
		buf = buf[:0]
		for _, r := range sl.Regions {
			n := len(buf)
			buf = append(buf, make([]byte, r.Length)...)
			if _, err := r.File.ReadAt(buf[n:], r.Position); err != nil {
				sl.Release()
				return nil, fmt.Errorf("snapshot records of %s at %d: %w", s.dir, off, err)
			}
		}
		sl.Release()
		if len(buf) == 0 {
			break // the rest was cleaned away
		}
		next, err := batchesEnd(buf)
		if err != nil {
			return nil, fmt.Errorf("snapshot records of %s at %d: %w", s.dir, off, err)
		}
		if _, err := w.Write(buf); err != nil {
			return nil, err
		}
		off = next
	}
	return snap, nil
}

// batchesEnd is the offset after the last batch of whole batches b.
func batchesEnd(b []byte) (int64, error) {
	end := int64(-1)
	for pos := 0; pos < len(b); {
		if len(b)-pos < batchHeaderSize {
			return 0, errors.New("a partial batch header")
		}
		h, err := recordbatch.ParseHeader(b[pos:])
		if err != nil {
			return 0, err
		}
		if h.Size() > int64(len(b)-pos) {
			return 0, errors.New("a partial batch")
		}
		end = h.LastOffset() + 1
		pos += int(h.Size())
	}
	return end, nil
}

// ReadSnapshotHeader reads the snapshot WriteSnapshot put before its
// records.
func ReadSnapshotHeader(r io.Reader) (*pb.Snapshot, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, fmt.Errorf("snapshot header: %w", err)
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxSnapshotHeader {
		return nil, fmt.Errorf("snapshot header of %d bytes, at most %d", size, maxSnapshotHeader)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("snapshot header: %w", err)
	}
	var snap pb.Snapshot
	if err := proto.Unmarshal(b, &snap); err != nil {
		return nil, fmt.Errorf("snapshot header: %w", err)
	}
	if _, err := parseSnapData(snap.Data); err != nil {
		return nil, err
	}
	return &snap, nil
}

// stagedCopy is one staged copy: the snapshot its records are of, and its
// file.
type stagedCopy struct {
	snap *pb.Snapshot
	path string
}

func stagedPath(dir string, index uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%020d", copyFile, index))
}

// StageSnapshot reads the records of snap (the rest of what WriteSnapshot
// wrote after the header ReadSnapshotHeader returned) into
// raft-snapshot-copy-<index>, checking every batch's CRC and that the
// batches lie in order within [start, offset), and makes it durable. It
// replaces a copy staged before for the same index only: copies of other
// snapshots stay staged (maxStaged). Staging runs outside raft's round (it
// may take long); Staged then says the snapshot may be stepped.
func (s *Storage) StageSnapshot(snap *pb.Snapshot, r io.Reader) error {
	d, err := parseSnapData(snap.GetData())
	if err != nil {
		return err
	}
	index := snap.GetMetadata().GetIndex()
	path := stagedPath(s.dir, index)
	tmp := path + tempSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("stage snapshot: %w", err)
	}
	defer os.Remove(tmp) // after the rename, nothing
	err = writeStaged(f, snap, d, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("stage snapshot %d of %s: %w", index, s.dir, err)
	}
	// The file and the mark change together, under the lock an
	// ApplySnapshot holds throughout: one applying a copy removes the
	// files of its index and below when it is done, and a rename between
	// its read and its removal would lose this copy while the mark said it
	// was staged (the replica could then neither apply the snapshot nor
	// reopen).
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("stage snapshot: %w", err)
	}
	if err := syncDir(s.dir); err != nil {
		return fmt.Errorf("stage snapshot: %w", err)
	}
	if s.staged == nil {
		s.staged = map[uint64]stagedCopy{}
	}
	s.staged[index] = stagedCopy{snap: proto.CloneOf(snap), path: path}
	for len(s.staged) > maxStaged {
		oldest := index
		for i := range s.staged {
			oldest = min(oldest, i)
		}
		if err := s.dropStagedLocked(oldest); err != nil {
			return fmt.Errorf("stage snapshot: %w", err)
		}
	}
	return nil
}

// writeStaged writes the staged file: the snapshot header, CRC-framed, then
// the batches, each checked as it streams through.
func writeStaged(f *os.File, snap *pb.Snapshot, d snapData, r io.Reader) error {
	hb, err := proto.Marshal(snap)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, copyChunk)
	head := frame("SPSC", hb)
	if _, err := w.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(head))), head...)); err != nil {
		return err
	}
	br := bufio.NewReaderSize(r, 64<<10)
	next := d.start
	var b []byte
	for {
		var err error
		b, err = readBatch(br, b[:0])
		if err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("after offset %d: %w", next, err)
		}
		base := int64(binary.BigEndian.Uint64(b))
		h, cerr := recordbatch.Check(b, true)
		if cerr != nil {
			return fmt.Errorf("batch at %d: %w", base, cerr)
		}
		if base < next || h.LastOffset() >= d.offset {
			return fmt.Errorf("batch [%d, %d] outside [%d, %d) or out of order", base, h.LastOffset(), next, d.offset)
		}
		next = h.LastOffset() + 1
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Sync()
}

// readBatch appends the next batch of r to dst, its size bounded by
// maxCopyBatch (a peer is never trusted); io.EOF at a batch boundary.
func readBatch(r io.Reader, dst []byte) ([]byte, error) {
	var hdr [12]byte // base offset, length
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return dst, fmt.Errorf("a torn batch header: %w", err)
		}
		return dst, err
	}
	size := int64(binary.BigEndian.Uint32(hdr[offLength:])) + offEpoch
	if size < batchHeaderSize || size > maxCopyBatch {
		return dst, fmt.Errorf("a batch of %d bytes at offset %d", size, int64(binary.BigEndian.Uint64(hdr[:])))
	}
	n := len(dst)
	dst = append(dst, hdr[:]...)
	dst = append(dst, make([]byte, size-int64(len(hdr)))...)
	if _, err := io.ReadFull(r, dst[n+len(hdr):]); err != nil {
		return dst[:n], fmt.Errorf("batch at offset %d: %w", int64(binary.BigEndian.Uint64(hdr[:])), err)
	}
	return dst, nil
}

// Staged says whether the records of snap are staged (or snap needs none),
// so raft may be given it.
func (s *Storage) Staged(snap *pb.Snapshot) bool {
	if !NeedsCopy(snap) {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stagedLocked(snap)
}

func (s *Storage) stagedLocked(snap *pb.Snapshot) bool {
	c, ok := s.staged[snap.GetMetadata().GetIndex()]
	return ok && sameSnapshot(c.snap, snap)
}

// openStaged opens a staged copy and returns the snapshot it is of, the
// file positioned at its first batch.
func openStaged(path string) (*os.File, *pb.Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	var n [4]byte
	if _, err := io.ReadFull(f, n[:]); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxSnapshotHeader {
		f.Close()
		return nil, nil, fmt.Errorf("%s: header of %d bytes", path, size)
	}
	head := make([]byte, size)
	if _, err := io.ReadFull(f, head); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	body, err := unframe(path, "SPSC", head)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	var snap pb.Snapshot
	if err := proto.Unmarshal(body, &snap); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, &snap, nil
}

// readStagedCopies finds the copies an earlier run staged, by the index of
// the snapshot each is of (read from the file, not its name). One that
// cannot be read is left out, and its file removed by the next apply at or
// above the index its name says.
func readStagedCopies(dir string) map[uint64]stagedCopy {
	out := map[uint64]stagedCopy{}
	names, _ := filepath.Glob(filepath.Join(dir, copyFile+"*"))
	for _, path := range names {
		if strings.HasSuffix(path, tempSuffix) {
			continue
		}
		f, snap, err := openStaged(path)
		if err != nil {
			continue
		}
		f.Close()
		out[snap.GetMetadata().GetIndex()] = stagedCopy{snap: snap, path: path}
	}
	return out
}

// restartFromCopy empties the log and fills it with the staged copy of
// snap's records: the log restarts at the snapshot's log start, the
// batches go in as the leader holds them, and the log end is the
// snapshot's offset. Durable when it returns; the copy is removed after.
func (s *Storage) restartFromCopy(index, term uint64) error {
	c, ok := s.staged[index]
	if !ok {
		return fmt.Errorf("the records of snapshot %d are not staged", index)
	}
	f, staged, err := openStaged(c.path)
	if err != nil {
		return fmt.Errorf("the records of snapshot %d are not staged: %w", index, err)
	}
	defer f.Close()
	if staged.GetMetadata().GetIndex() != index || staged.GetMetadata().GetTerm() != term {
		return fmt.Errorf("the records staged are of snapshot %d, not %d", staged.GetMetadata().GetIndex(), index)
	}
	d, err := parseSnapData(staged.GetData())
	if err != nil {
		return err
	}
	if err := s.log.RestartAt(d.start); err != nil {
		return err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	var buf []byte
	for {
		// Appended in chunks of about copyChunk: one append must not
		// overfill a segment.
		n := len(buf)
		var err error
		buf, err = readBatch(br, buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("staged copy: %w", err)
		}
		if n > 0 && len(buf) > copyChunk {
			if err := s.log.AppendCopied(buf[:n], 0); err != nil {
				return err
			}
			buf = append(buf[:0], buf[n:]...)
		}
	}
	if err := s.log.AppendCopied(buf, d.offset); err != nil {
		return err
	}
	if s.log.EndOffset() != d.offset {
		return fmt.Errorf("the staged copy ends at %d, the snapshot's entries start at %d", s.log.EndOffset(), d.offset)
	}
	return s.log.Flush()
}

// removeStaged deletes the staged copies of snapshots up to index, once
// that one is applied: the older ones are outdated. Copies of later
// snapshots stay. A file of a copy the map does not know (one that could
// not be read at Open) goes too when its name is of such an index.
func (s *Storage) removeStaged(index uint64) error {
	for i := range s.staged {
		if i <= index {
			if err := s.dropStagedLocked(i); err != nil {
				return err
			}
		}
	}
	names, _ := filepath.Glob(filepath.Join(s.dir, copyFile+"*"))
	for _, path := range names {
		base := filepath.Base(path)
		if strings.HasSuffix(base, tempSuffix) {
			continue
		}
		var i uint64 // 0: the bare name of a version before per-index copies
		if base != copyFile {
			if _, err := fmt.Sscanf(base, copyFile+"-%d", &i); err != nil {
				continue
			}
		}
		if _, known := s.staged[i]; !known && i <= index {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// dropStagedLocked deletes one staged copy.
func (s *Storage) dropStagedLocked(index uint64) error {
	c, ok := s.staged[index]
	if !ok {
		return nil
	}
	delete(s.staged, index)
	if err := os.Remove(c.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
