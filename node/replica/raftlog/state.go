package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

const (
	hardStateFile = "raft-hardstate"
	snapshotFile  = "raft-snapshot"
	tempSuffix    = ".tmp" // the partition removes leftovers with this suffix on open
)

// snapMeta is what raft-snapshot holds: the entry just before the log, and
// where the log's first entry starts.
type snapMeta struct {
	index, term uint64
	conf        *pb.ConfState
	offset      int64
	// restart: ApplySnapshot recorded this snapshot but may not have
	// emptied the log yet; Open finishes it.
	restart bool
	// copied: the snapshot holds records, staged in raft-snapshot-copy-<index>,
	// which the restart copies into the log (copy.go).
	copied bool
	// floor, if above offset, is a log start DeleteRecords moved into the
	// batch of the first entry: the log start once the log reaches it.
	floor int64
}

// State files are framed as: 4-byte magic, version byte, body, CRC-32C of
// what precedes it. They are replaced atomically, so a bad CRC means other
// hands damaged them: Open fails rather than guess a term or a vote.
func frame(magic string, body []byte) []byte {
	b := append([]byte(magic), 1)
	b = append(b, body...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func unframe(path, magic string, b []byte) ([]byte, error) {
	if len(b) < len(magic)+5 || string(b[:len(magic)]) != magic || b[len(magic)] != 1 {
		return nil, fmt.Errorf("%s: not a version 1 %s file", path, magic)
	}
	n := len(b) - 4
	if crc32.Checksum(b[:n], castagnoli) != binary.BigEndian.Uint32(b[n:]) {
		return nil, fmt.Errorf("%s: checksum mismatch", path)
	}
	return b[len(magic)+1 : n], nil
}

func encodeSnapMeta(m snapMeta) []byte {
	body := binary.BigEndian.AppendUint64(nil, uint64(m.offset))
	flags := byte(0)
	if m.restart {
		flags |= 1
	}
	if m.copied {
		flags |= 2
	}
	if m.floor > m.offset {
		flags |= 4
	}
	body = append(body, flags)
	if flags&4 != 0 {
		body = binary.BigEndian.AppendUint64(body, uint64(m.floor))
	}
	md, err := proto.Marshal(&pb.SnapshotMetadata{Index: proto.Uint64(m.index), Term: proto.Uint64(m.term), ConfState: m.conf})
	if err != nil {
		panic(fmt.Sprintf("marshal snapshot metadata: %v", err)) // only a broken proto runtime fails here
	}
	return frame("SPRS", append(body, md...))
}

// readSnapMeta returns ok false if the file does not exist.
func readSnapMeta(dir string) (m snapMeta, ok bool, err error) {
	path := filepath.Join(dir, snapshotFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("read %s: %w", path, err)
	}
	body, err := unframe(path, "SPRS", b)
	if err != nil {
		return m, false, err
	}
	if len(body) < 9 {
		return m, false, fmt.Errorf("%s: %d bytes", path, len(body))
	}
	rest, floor := body[9:], int64(0)
	if body[8]&4 != 0 {
		if len(rest) < 8 {
			return m, false, fmt.Errorf("%s: %d bytes", path, len(body))
		}
		floor, rest = int64(binary.BigEndian.Uint64(rest)), rest[8:]
	}
	var md pb.SnapshotMetadata
	if err := proto.Unmarshal(rest, &md); err != nil {
		return m, false, fmt.Errorf("%s: %w", path, err)
	}
	m = snapMeta{index: md.GetIndex(), term: md.GetTerm(), conf: pb.EnsureConfState(md.GetConfState()),
		offset: int64(binary.BigEndian.Uint64(body)), restart: body[8]&1 != 0, copied: body[8]&2 != 0, floor: floor}
	if m.offset < 0 {
		return m, false, fmt.Errorf("%s: negative offset %d", path, m.offset)
	}
	return m, true, nil
}

func encodeHardState(hs *pb.HardState) []byte {
	b, err := proto.Marshal(hs)
	if err != nil {
		panic(fmt.Sprintf("marshal hard state: %v", err))
	}
	return frame("SPHS", b)
}

// readHardState returns an empty state if the file does not exist.
func readHardState(dir string) (*pb.HardState, error) {
	path := filepath.Join(dir, hardStateFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &pb.HardState{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	body, err := unframe(path, "SPHS", b)
	if err != nil {
		return nil, err
	}
	var hs pb.HardState
	if err := proto.Unmarshal(body, &hs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &hs, nil
}

// writeFileAtomic replaces dir/name durably: write a temporary file, fsync,
// rename, fsync the directory. (The partition and node each have one too;
// they are to become internal/atomicfile.)
func writeFileAtomic(dir, name string, data []byte) error {
	path := filepath.Join(dir, name)
	tmp := path + tempSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}
