package tier

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/spool-log/spool/internal/atomicfile"
	"github.com/spool-log/spool/partition"
)

// ManifestFile is the manifest's name in the partition directory.
const ManifestFile = "remote-manifest"

// maxManifestSegments bounds a manifest (and the file read back):
// a million segments, a petabyte at the default segment.bytes.
const maxManifestSegments = 1 << 20

var manifestMagic = [4]byte{'S', 'P', 'T', 'M'}

// Manifest is one replica's record of its partition's remote segments:
// the committed upload records applied in log order, and the remote log
// start. It implements replica.RemoteLog. Its file (ManifestFile) is
// rewritten atomically, durably, before an apply returns.
type Manifest struct {
	path string
	// tiered: the topic has remote.storage.enable (SetTiered).
	tiered atomic.Bool

	mu    sync.Mutex
	segs  []RemoteSegment // by Base; each starts at or below the previous one's Next and ends above it
	start int64           // remote log start: nothing below is served from the store
	// behind: a Raft snapshot moved this replica's log past records it
	// never applied (MarkBehind), up to behindTo; until the store's copy
	// is merged (Merge), records are held in pending, not applied.
	behind   bool
	behindTo int64
	// pending are the committed records that arrived while behind, in
	// log order: all of them come after the records the snapshot skipped,
	// so Merge replays them, in order, after the store's copy. In memory only: after a restart Raft applies
	// again what is above the replica's snapshot, and the store's copy,
	// rewritten after every record, holds the rest.
	pending []Record
}

// maxPending bounds the records held while a manifest is behind; past it
// the oldest go (the store's copy, rewritten after every record, has them).
const maxPending = 4096

// OpenManifest reads the manifest in dir, or starts an empty one.
func OpenManifest(dir string) (*Manifest, error) {
	m := &Manifest{path: filepath.Join(dir, ManifestFile)}
	b, err := os.ReadFile(m.path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open remote manifest: %w", err)
	}
	start, segs, err := DecodeManifest(b)
	if err != nil {
		return nil, fmt.Errorf("remote manifest %s: %w", m.path, err)
	}
	m.start, m.segs = start, segs
	return m, nil
}

// SetTiered says whether the topic is tiered now (remote.storage.enable).
func (m *Manifest) SetTiered(on bool) { m.tiered.Store(on) }

// Tiered says whether the topic is tiered.
func (m *Manifest) Tiered() bool { return m.tiered.Load() }

// ApplyRemote implements replica.RemoteLog. An upload is kept when it
// continues the manifest (starts at or below its end and ends above it);
// another (a second leader's copy of a range already recorded, or one
// leaving a gap) changes nothing: its objects become orphans. A start
// record moves the remote log start up and drops the segments wholly
// below it. Re-applying a record (after a restart) changes nothing.
func (m *Manifest) ApplyRemote(payload []byte) error {
	rec, err := DecodeRecord(payload)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.behind {
		m.hold(rec)
		return nil
	}
	segs, start, _, err := applyRecord(m.segs, m.start, rec)
	if err != nil || (len(segs) == len(m.segs) && start == m.start) {
		return err
	}
	return m.writeLocked(segs, start)
}

// hold keeps rec for Merge (bounded: the oldest go first). Under mu.
func (m *Manifest) hold(rec Record) {
	if len(m.pending) >= maxPending {
		m.pending = slices.Delete(m.pending, 0, 1)
	}
	m.pending = append(m.pending, rec)
}

func (m *Manifest) writeLocked(segs []RemoteSegment, start int64) error {
	if err := atomicfile.Write(m.path, EncodeManifest(start, segs), 0o644); err != nil {
		return fmt.Errorf("write remote manifest: %w", err)
	}
	m.segs, m.start = segs, start
	return nil
}

// applyRecord is rec applied to (segs, start): an upload kept when it
// continues the segments, a start moving up; unchanged otherwise. gap says
// the upload starts above the end (records before it not seen here).
func applyRecord(segs []RemoteSegment, start int64, rec Record) (_ []RemoteSegment, _ int64, gap bool, _ error) {
	switch {
	case rec.Upload != nil:
		s := *rec.Upload
		if len(segs) > 0 {
			end := segs[len(segs)-1].Next
			if s.Base > end {
				return segs, start, true, nil
			}
			if s.Next <= end {
				return segs, start, false, nil
			}
		} else if s.Next <= start {
			return segs, start, false, nil
		}
		if len(segs) >= maxManifestSegments {
			return segs, start, false, fmt.Errorf("remote manifest: more than %d segments", maxManifestSegments)
		}
		return append(slices.Clip(segs), s), start, false, nil
	default:
		if rec.Start <= start {
			return segs, start, false, nil
		}
		n := 0
		for n < len(segs) && segs[n].Next <= rec.Start {
			n++
		}
		return slices.Clone(segs[n:]), rec.Start, false, nil
	}
}

// MarkBehind says a Raft snapshot moved this replica's log to upTo past
// entries it never applied, remote records among them: until Merge brings
// the store's copy in, records are held, and NeedsMerge is true. Called in
// the replica's Raft round: no I/O.
func (m *Manifest) MarkBehind(upTo int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.behind = true
	m.behindTo = max(m.behindTo, upTo)
}

// NeedsMerge says whether this manifest must be caught up from the
// store's copy: it is behind (MarkBehind), or the local log starts past
// its end (localStart: a snapshot applied before a restart). Records held
// for a gap alone do not count: a deposed leader's record may never
// continue anything, and must not stop uploads.
func (m *Manifest) NeedsMerge(localStart int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	end := int64(0)
	if len(m.segs) > 0 {
		end = m.segs[len(m.segs)-1].Next
	}
	return m.behind || (len(m.segs) > 0 && end < localStart)
}

// Gap says whether offset, below the local log start, is one this
// manifest cannot answer for yet (it is behind, or offset is at or past
// its end: the local log starts above it, so records are missing here): a
// reader should retry, not be told the offset is gone.
func (m *Manifest) Gap(offset int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.behind {
		return offset >= m.start
	}
	return len(m.segs) > 0 && offset >= m.segs[len(m.segs)-1].Next
}

// Behind says whether a snapshot left this manifest short (MarkBehind)
// and the store's copy is not merged yet.
func (m *Manifest) Behind() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.behind
}

// Merge catches the manifest up from a copy of the partition's manifest
// (the store's, which every leader rewrites after each record it
// committed, so it only ever holds committed records): its start and each
// of its segments are applied as records, then the held records in log
// order. Applying a record twice changes nothing, so a copy older or
// newer than this manifest is safe. The manifest stops being behind once
// its end reaches where the snapshot moved the log, or found is false (no
// copy in the store: nothing was uploaded). It returns whether it is
// caught up.
func (m *Manifest) Merge(start int64, segs []RemoteSegment, found bool) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, curStart := m.segs, m.start
	var err error
	if found {
		// A copy newer than this manifest may start past segments
		// this one kept: its start first.
		if cur, curStart, _, err = applyRecord(cur, curStart, Record{Start: start}); err != nil {
			return false, err
		}
		for i := range segs {
			if cur, curStart, _, err = applyRecord(cur, curStart, Record{Upload: &segs[i]}); err != nil {
				return false, err
			}
		}
	}
	var still []Record
	for _, rec := range m.pending {
		var gap bool
		if cur, curStart, gap, err = applyRecord(cur, curStart, rec); err != nil {
			return false, err
		}
		if gap {
			still = append(still, rec)
		}
	}
	end := int64(0)
	if len(cur) > 0 {
		end = cur[len(cur)-1].Next
	}
	// Caught up once the copy reaches the local log start and every held
	// record found its place; a copy older than that is retried (the
	// leader rewrites it after each record), unless there is none at all.
	caught := !found || (end >= m.behindTo && len(still) == 0)
	if !slices.EqualFunc(cur, m.segs, RemoteSegment.Equal) || curStart != m.start {
		if err := m.writeLocked(cur, curStart); err != nil {
			return false, err
		}
	}
	if caught {
		m.behind, m.behindTo, m.pending = false, 0, nil
	}
	return caught, nil
}

// LocalRetentionFloor implements replica.RemoteLog: for a tiered topic,
// the end of the committed uploads.
func (m *Manifest) LocalRetentionFloor() (int64, bool) {
	if !m.tiered.Load() {
		return 0, false
	}
	return m.End(), true
}

// End is the offset after the last uploaded segment; with none, the
// remote start (0 on a partition never uploaded; past every upload once
// remote retention expired them all, which local retention and the next
// upload must not go below).
func (m *Manifest) End() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.segs) == 0 {
		return m.start
	}
	return m.segs[len(m.segs)-1].Next
}

// Start is the remote log start: the first offset the store serves, or
// End when nothing is remote.
func (m *Manifest) Start() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.segs) == 0 {
		return m.start
	}
	return max(m.start, m.segs[0].Base)
}

// Segments is a copy of the remote segments, oldest first.
func (m *Manifest) Segments() []RemoteSegment {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.segs)
}

// Epochs is the leader-epoch cache of the remote records below offset
// (the local log start), oldest first: the segments' Epochs joined, from
// the remote start. Segments recorded without their epochs (version 1
// records) add nothing, so an epoch of theirs is answered by the next
// known start, at or above its true end, never below it.
func (m *Manifest) Epochs(below int64) []partition.EpochEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []partition.EpochEntry
	for _, s := range m.segs {
		for _, e := range s.Epochs {
			if e.StartOffset >= below {
				return out
			}
			e.StartOffset = max(e.StartOffset, m.start)
			n := len(out)
			switch {
			case n > 0 && e.Epoch <= out[n-1].Epoch:
				// An overlapping segment's copy of what is known.
			case n > 0 && e.StartOffset <= out[n-1].StartOffset:
				// Both raised to the remote start: the newer is
				// the one in effect there.
				out[n-1].Epoch = e.Epoch
			default:
				out = append(out, e)
			}
		}
	}
	return out
}

// Bytes is the remote log's size.
func (m *Manifest) Bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for _, s := range m.segs {
		n += s.Size
	}
	return n
}

// Find is the remote segment holding offset: the last that starts at or
// below it, if it ends above it and offset is at or above the start.
func (m *Manifest) Find(offset int64) (RemoteSegment, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if offset < m.start {
		return RemoteSegment{}, false
	}
	i, _ := slices.BinarySearchFunc(m.segs, offset, func(s RemoteSegment, off int64) int {
		switch {
		case s.Base <= off:
			return -1
		}
		return 1
	})
	// i is the first with Base > offset; a later segment of an overlap
	// starts at or below the earlier one's end, so the last starting at
	// or below offset is the one to read.
	if i == 0 || m.segs[i-1].Next <= offset {
		return RemoteSegment{}, false
	}
	return m.segs[i-1], true
}

// EncodeManifest is the manifest file's (and the store's manifest
// object's) encoding:
//
//	magic "SPTM", version u8 (2), start i64, count u32,
//	count upload records (record.go) back to back, CRC-32C of all before it (u32)
//
// Version 1, still read, is the same with version 1 upload records.
func EncodeManifest(start int64, segs []RemoteSegment) []byte {
	b := make([]byte, 0, 4+1+8+4+len(segs)*(uploadRecordSize+2+epochEntrySize)+4)
	b = append(b, manifestMagic[:]...)
	b = append(b, manifestVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(start))
	b = binary.BigEndian.AppendUint32(b, uint32(len(segs)))
	for _, s := range segs {
		b = append(b, EncodeUpload(s)...)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

const manifestVersion = 2

// DecodeManifest decodes EncodeManifest's bytes, checking every bound.
func DecodeManifest(b []byte) (start int64, segs []RemoteSegment, err error) {
	const head = 4 + 1 + 8 + 4
	if len(b) < head+4 || [4]byte(b[:4]) != manifestMagic || (b[4] != 1 && b[4] != manifestVersion) {
		return 0, nil, errors.New("not a remote manifest")
	}
	version := b[4]
	body := b[:len(b)-4]
	if crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return 0, nil, errors.New("remote manifest checksum mismatch")
	}
	start = int64(binary.BigEndian.Uint64(b[5:]))
	n := binary.BigEndian.Uint32(b[13:])
	if start < 0 || n > maxManifestSegments || int64(len(body)-head) < int64(n)*int64(uploadRecordSize) {
		return 0, nil, fmt.Errorf("remote manifest: start %d, %d segments in %d bytes", start, n, len(b))
	}
	segs = make([]RemoteSegment, 0, n)
	at := head
	for i := range int(n) {
		if at >= len(body) || body[at] != version {
			return 0, nil, fmt.Errorf("remote manifest version %d: segment %d is not a version %d record", version, i, version)
		}
		s, size, err := decodeUpload(body[at:])
		if err != nil {
			return 0, nil, err
		}
		at += size
		if i > 0 && (s.Base > segs[i-1].Next || s.Next <= segs[i-1].Next) {
			return 0, nil, fmt.Errorf("remote manifest: segment [%d,%d) does not continue [%d,%d)", s.Base, s.Next, segs[i-1].Base, segs[i-1].Next)
		}
		segs = append(segs, s)
	}
	if at != len(body) {
		return 0, nil, fmt.Errorf("remote manifest: %d bytes after its %d segments", len(body)-at, n)
	}
	return start, segs, nil
}
