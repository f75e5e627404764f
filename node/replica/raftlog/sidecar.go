package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"

	pb "go.etcd.io/raft/v3/raftpb"
)

// sidecarFile holds Raft's own entries, which take no Kafka offset.
const sidecarFile = "raft-entries"

// sideEntry is a Raft entry that holds no records: the empty entry a new
// leader appends, or a configuration change. It sits before the batch that
// starts at offset (or at the log end, when nothing follows it yet).
type sideEntry struct {
	index, term uint64
	typ         pb.EntryType
	data        []byte
	offset      int64
}

// sidecar is the file of side entries and its contents, in index order.
// Records are appended and fsynced one at a time (one per election, so
// the cost does not matter), each framed as: 4-byte body length, body,
// CRC-32C of length and body. Body: version 1, index, term, offset (8
// bytes each, big-endian), entry type (1 byte), data. Not safe for
// concurrent use.
type sidecar struct {
	dir  string
	f    *os.File // nil until the first record is written or read
	ents []sideEntry
	ends []int64 // file size after each record, for truncation
}

const sideVersion = 1

func encodeSide(e sideEntry) []byte {
	body := []byte{sideVersion}
	body = binary.BigEndian.AppendUint64(body, e.index)
	body = binary.BigEndian.AppendUint64(body, e.term)
	body = binary.BigEndian.AppendUint64(body, uint64(e.offset))
	body = append(body, byte(e.typ))
	body = append(body, e.data...)
	b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	b = append(b, body...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// openSidecar reads dir's sidecar file, if any. A record cut short at the
// end (a crash inside an append, which was then never acknowledged) is cut
// off; a damaged record before the end fails, as it cannot be a torn write.
func openSidecar(dir string) (*sidecar, error) {
	sc := &sidecar{dir: dir}
	path := filepath.Join(dir, sidecarFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return sc, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	pos := 0
	for pos < len(b) {
		if len(b)-pos < 8 {
			break // torn
		}
		n := int(binary.BigEndian.Uint32(b[pos:]))
		end := pos + 4 + n + 4
		if n > len(b) || end > len(b) {
			break // torn
		}
		if crc32.Checksum(b[pos:end-4], castagnoli) != binary.BigEndian.Uint32(b[end-4:]) {
			if end == len(b) {
				break // torn
			}
			return nil, fmt.Errorf("%s: record at byte %d: checksum mismatch", path, pos)
		}
		body := b[pos+4 : end-4]
		if len(body) < 26 || body[0] != sideVersion {
			return nil, fmt.Errorf("%s: record at byte %d: not a version %d record", path, pos, sideVersion)
		}
		e := sideEntry{
			index:  binary.BigEndian.Uint64(body[1:]),
			term:   binary.BigEndian.Uint64(body[9:]),
			offset: int64(binary.BigEndian.Uint64(body[17:])),
			typ:    pb.EntryType(body[25]),
		}
		if len(body) > 26 {
			e.data = body[26:]
		}
		if _, ok := pb.EntryType_name[int32(e.typ)]; !ok || e.offset < 0 {
			return nil, fmt.Errorf("%s: record at byte %d: entry type %d, offset %d", path, pos, e.typ, e.offset)
		}
		if k := len(sc.ents); k > 0 && (e.index <= sc.ents[k-1].index || e.offset < sc.ents[k-1].offset) {
			return nil, fmt.Errorf("%s: entry %d at offset %d after entry %d at offset %d", path, e.index, e.offset, sc.ents[k-1].index, sc.ents[k-1].offset)
		}
		sc.ents = append(sc.ents, e)
		sc.ends = append(sc.ends, int64(end))
		pos = end
	}
	if pos < len(b) {
		if err := sc.truncateFile(int64(pos)); err != nil {
			return nil, err
		}
	}
	return sc, nil
}

func (sc *sidecar) path() string { return filepath.Join(sc.dir, sidecarFile) }

// file opens the sidecar file, creating it (durably: the directory entry
// too) if it does not exist.
func (sc *sidecar) file() (*os.File, error) {
	if sc.f != nil {
		return sc.f, nil
	}
	_, statErr := os.Stat(sc.path())
	f, err := os.OpenFile(sc.path(), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", sc.path(), err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		if err := syncDir(sc.dir); err != nil {
			f.Close()
			return nil, err
		}
	}
	sc.f = f
	return f, nil
}

func (sc *sidecar) size() int64 {
	if len(sc.ends) == 0 {
		return 0
	}
	return sc.ends[len(sc.ends)-1]
}

// append writes e durably: it returns once e is on disk.
func (sc *sidecar) append(e sideEntry) error {
	f, err := sc.file()
	if err != nil {
		return err
	}
	rec := encodeSide(e)
	if _, err := f.WriteAt(rec, sc.size()); err != nil {
		// A part written (a full disk) would read as damage once a
		// later record follows it: cut it, as far as the disk lets.
		f.Truncate(sc.size())
		return fmt.Errorf("write %s: %w", sc.path(), err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", sc.path(), err)
	}
	sc.ents = append(sc.ents, e)
	sc.ends = append(sc.ends, sc.size()+int64(len(rec)))
	return nil
}

// search is the position of the first entry at or after index.
func (sc *sidecar) search(index uint64) int {
	return sort.Search(len(sc.ents), func(k int) bool { return sc.ents[k].index >= index })
}

// dropFrom removes the entries from position k on, durably.
func (sc *sidecar) dropFrom(k int) error {
	if k >= len(sc.ents) {
		return nil
	}
	size := int64(0)
	if k > 0 {
		size = sc.ends[k-1]
	}
	if err := sc.truncateFile(size); err != nil {
		return err
	}
	sc.ents, sc.ends = sc.ents[:k], sc.ends[:k]
	return nil
}

func (sc *sidecar) truncateFile(size int64) error {
	f, err := sc.file()
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("truncate %s: %w", sc.path(), err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", sc.path(), err)
	}
	return nil
}

// compact removes the entries up to and including index by rewriting the
// file (atomically) with the rest.
func (sc *sidecar) compact(index uint64) error {
	k := sc.search(index + 1)
	if k == 0 {
		return nil
	}
	rest := sc.ents[k:]
	var b []byte
	ends := make([]int64, 0, len(rest))
	for _, e := range rest {
		b = append(b, encodeSide(e)...)
		ends = append(ends, int64(len(b)))
	}
	if sc.f != nil {
		sc.f.Close()
		sc.f = nil
	}
	if err := writeFileAtomic(sc.dir, sidecarFile, b); err != nil {
		return err
	}
	sc.ents, sc.ends = append([]sideEntry(nil), rest...), ends
	return nil
}

func (sc *sidecar) close() error {
	if sc.f == nil {
		return nil
	}
	err := sc.f.Close()
	sc.f = nil
	return err
}

func syncDir(dir string) error {
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
