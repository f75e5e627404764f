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
}

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
	segs, start := m.segs, m.start
	switch {
	case rec.Upload != nil:
		s := *rec.Upload
		if len(segs) > 0 {
			end := segs[len(segs)-1].Next
			if s.Base > end || s.Next <= end {
				return nil
			}
		} else if s.Next <= start {
			return nil
		}
		if len(segs) >= maxManifestSegments {
			return fmt.Errorf("remote manifest: more than %d segments", maxManifestSegments)
		}
		segs = append(slices.Clip(segs), s)
	default:
		if rec.Start <= start {
			return nil
		}
		start = rec.Start
		n := 0
		for n < len(segs) && segs[n].Next <= start {
			n++
		}
		segs = slices.Clone(segs[n:])
	}
	if err := atomicfile.Write(m.path, EncodeManifest(start, segs), 0o644); err != nil {
		return fmt.Errorf("write remote manifest: %w", err)
	}
	m.segs, m.start = segs, start
	return nil
}

// LocalRetentionFloor implements replica.RemoteLog: for a tiered topic,
// the end of the committed uploads.
func (m *Manifest) LocalRetentionFloor() (int64, bool) {
	if !m.tiered.Load() {
		return 0, false
	}
	return m.End(), true
}

// End is the offset after the last uploaded segment (0 with none).
func (m *Manifest) End() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.segs) == 0 {
		return 0
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
//	magic "SPTM", version u8 (1), start i64, count u32,
//	count upload records (record.go), CRC-32C of all before it (u32)
func EncodeManifest(start int64, segs []RemoteSegment) []byte {
	b := make([]byte, 0, 4+1+8+4+len(segs)*uploadRecordSize+4)
	b = append(b, manifestMagic[:]...)
	b = append(b, 1)
	b = binary.BigEndian.AppendUint64(b, uint64(start))
	b = binary.BigEndian.AppendUint32(b, uint32(len(segs)))
	for _, s := range segs {
		b = append(b, EncodeUpload(s)...)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

// DecodeManifest decodes EncodeManifest's bytes, checking every bound.
func DecodeManifest(b []byte) (start int64, segs []RemoteSegment, err error) {
	const head = 4 + 1 + 8 + 4
	if len(b) < head+4 || [4]byte(b[:4]) != manifestMagic || b[4] != 1 {
		return 0, nil, errors.New("not a remote manifest")
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return 0, nil, errors.New("remote manifest checksum mismatch")
	}
	start = int64(binary.BigEndian.Uint64(b[5:]))
	n := binary.BigEndian.Uint32(b[13:])
	if start < 0 || n > maxManifestSegments || int64(len(body)-head) != int64(n)*int64(uploadRecordSize) {
		return 0, nil, fmt.Errorf("remote manifest: start %d, %d segments in %d bytes", start, n, len(b))
	}
	segs = make([]RemoteSegment, 0, n)
	for i := range int(n) {
		s, err := decodeUpload(body[head+i*uploadRecordSize : head+(i+1)*uploadRecordSize])
		if err != nil {
			return 0, nil, err
		}
		if i > 0 && (s.Base > segs[i-1].Next || s.Next <= segs[i-1].Next) {
			return 0, nil, fmt.Errorf("remote manifest: segment [%d,%d) does not continue [%d,%d)", s.Base, s.Next, segs[i-1].Base, segs[i-1].Next)
		}
		segs = append(segs, s)
	}
	return start, segs, nil
}
