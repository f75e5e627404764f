package hosted

// The shutdown checkpoint: one file in the data dir, written once when the
// node stops, with every partition's recovery point and Raft commit index
// (as Kafka keeps one recovery-point-offset-checkpoint per log dir). Each
// partition used to write its own at close, four fsyncs apiece, and a node
// with 10,000 replicas took longer than 20 s to stop. Nothing in it is
// needed for safety: without it a log walks its tail from its own recovery
// point, and a group learns its commit index from its leader.
//
// The file vouches only for logs nothing changed since it was written, so
// it is read and durably removed as the node starts, before any partition
// opens: a crash after that finds no file and takes the slow, safe path.
// Each entry is checked again where it is used (the log's last segment
// must have the recorded size and end, its own recovery point must not be
// newer than the file, the Raft log must end at the recorded entry).

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/internal/atomicfile"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/replica/raftlog"
)

const (
	// ShutdownCheckpointFileName is the file's name in the data dir.
	ShutdownCheckpointFileName = "shutdown-checkpoint"
	shutdownCheckpointMagic    = "spool-shutdown-checkpoint 1"
	// maxShutdownCheckpointBytes bounds what start reads: about 100 bytes
	// an entry, so a million partitions.
	maxShutdownCheckpointBytes = 128 << 20
)

var shutdownCRC = crc32.MakeTable(crc32.Castagnoli)

// ShutdownPoints are the entries of the file the node found at start,
// each handed to the first open of its partition directory. Those never
// opened are written again at the next stop, as nothing touched them.
type ShutdownPoints struct {
	mu      sync.Mutex
	written time.Time
	byDir   map[string]replica.ShutdownPoint
}

// TakeShutdownCheckpoint reads the data dir's shutdown checkpoint and
// removes it durably. A missing, unreadable or damaged file, or one that
// cannot be removed, gives no entries: every log then recovers as after a
// crash.
func TakeShutdownCheckpoint(dataDir string, log logrus.FieldLogger) *ShutdownPoints {
	sp := &ShutdownPoints{byDir: map[string]replica.ShutdownPoint{}}
	path := filepath.Join(dataDir, ShutdownCheckpointFileName)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return sp
	}
	if err != nil {
		log.WithError(err).Warn("shutdown checkpoint unreadable; every partition recovers from its own recovery point")
		return sp
	}
	st, statErr := f.Stat()
	b, readErr := io.ReadAll(io.LimitReader(f, maxShutdownCheckpointBytes+1))
	f.Close()
	var byDir map[string]replica.ShutdownPoint
	if err = errors.Join(statErr, readErr); err == nil {
		byDir, err = DecodeShutdownCheckpoint(b)
	}
	if rmErr := os.Remove(path); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
		err = errors.Join(err, rmErr)
		byDir = nil
	} else if syncErr := atomicfile.SyncDir(dataDir); syncErr != nil {
		err = errors.Join(err, syncErr)
		byDir = nil
	}
	if err != nil {
		log.WithError(err).Warn("shutdown checkpoint not used; every partition recovers from its own recovery point")
	}
	if byDir != nil {
		sp.byDir, sp.written = byDir, st.ModTime()
	}
	return sp
}

// Take hands over dir's entry, once; nil if there is none.
func (sp *ShutdownPoints) Take(dir string) (*replica.ShutdownPoint, time.Time) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	name := filepath.Base(dir)
	p, ok := sp.byDir[name]
	if !ok {
		return nil, time.Time{}
	}
	delete(sp.byDir, name)
	return &p, sp.written
}

// Untaken returns the entries no open took whose directories are still
// there.
func (sp *ShutdownPoints) Untaken(dataDir string) map[string]replica.ShutdownPoint {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	out := map[string]replica.ShutdownPoint{}
	for name, p := range sp.byDir {
		if st, err := os.Stat(filepath.Join(dataDir, name)); err == nil && st.IsDir() {
			out[name] = p
		}
	}
	return out
}

// WriteShutdownCheckpoint replaces the data dir's shutdown checkpoint
// durably (temp file, fsync, rename, fsync of the directory).
func WriteShutdownCheckpoint(dataDir string, byDir map[string]replica.ShutdownPoint) error {
	return atomicfile.Write(filepath.Join(dataDir, ShutdownCheckpointFileName), encodeShutdownCheckpoint(byDir), 0o644)
}

// The file is text: the magic line, the entry count, one line per
// partition directory — "name offset cleanBase cleanSize" then, for a
// replicated one, "commit lastIndex lastTerm" — and a last line with the
// CRC-32C of everything before it.
func encodeShutdownCheckpoint(byDir map[string]replica.ShutdownPoint) []byte {
	names := make([]string, 0, len(byDir))
	for name := range byDir {
		names = append(names, name)
	}
	slices.Sort(names)
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n%d\n", shutdownCheckpointMagic, len(names))
	for _, name := range names {
		p := byDir[name]
		fmt.Fprintf(&b, "%s %d %d %d", name, p.Log.Offset, p.Log.CleanBase, p.Log.CleanSize)
		if c := p.Commit; c != nil {
			fmt.Fprintf(&b, " %d %d %d", c.Commit, c.LastIndex, c.LastTerm)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "%08x\n", crc32.Checksum(b.Bytes(), shutdownCRC))
	return b.Bytes()
}

var errBadShutdownCheckpoint = errors.New("malformed shutdown checkpoint")

// DecodeShutdownCheckpoint reads a shutdown checkpoint's bytes: its
// entries by partition directory, or an error if any byte of it is
// damaged, it was cut short, or an entry names no partition directory.
func DecodeShutdownCheckpoint(b []byte) (map[string]replica.ShutdownPoint, error) {
	if len(b) > maxShutdownCheckpointBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", errBadShutdownCheckpoint, maxShutdownCheckpointBytes)
	}
	body, sum, ok := cutLastLine(b)
	if !ok {
		return nil, fmt.Errorf("%w: no checksum", errBadShutdownCheckpoint)
	}
	if sum != fmt.Sprintf("%08x", crc32.Checksum(body, shutdownCRC)) {
		return nil, fmt.Errorf("%w: checksum mismatch", errBadShutdownCheckpoint)
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 4096)
	if !sc.Scan() || sc.Text() != shutdownCheckpointMagic {
		return nil, fmt.Errorf("%w: not version 1", errBadShutdownCheckpoint)
	}
	if !sc.Scan() {
		return nil, fmt.Errorf("%w: no count", errBadShutdownCheckpoint)
	}
	count, err := strconv.Atoi(sc.Text())
	if err != nil || count < 0 || count > len(body) {
		return nil, fmt.Errorf("%w: count", errBadShutdownCheckpoint)
	}
	out := make(map[string]replica.ShutdownPoint, count)
	for i := range count {
		if !sc.Scan() {
			return nil, fmt.Errorf("%w: %d of %d entries", errBadShutdownCheckpoint, i, count)
		}
		name, p, err := parseShutdownEntry(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d: %v", errBadShutdownCheckpoint, i, err)
		}
		out[name] = p
	}
	if sc.Scan() || sc.Err() != nil {
		return nil, fmt.Errorf("%w: trailing data", errBadShutdownCheckpoint)
	}
	return out, nil
}

func parseShutdownEntry(line string) (string, replica.ShutdownPoint, error) {
	f := strings.Split(line, " ")
	if len(f) != 4 && len(f) != 7 {
		return "", replica.ShutdownPoint{}, fmt.Errorf("%d fields", len(f))
	}
	if _, _, ok := ParsePartitionDir(f[0]); !ok {
		return "", replica.ShutdownPoint{}, fmt.Errorf("%q is not a partition directory", f[0])
	}
	var ints [3]int64
	for i := range ints {
		v, err := strconv.ParseInt(f[1+i], 10, 64)
		if err != nil || v < 0 {
			return "", replica.ShutdownPoint{}, fmt.Errorf("field %d: %q", i+1, f[1+i])
		}
		ints[i] = v
	}
	p := replica.ShutdownPoint{}
	p.Log.Offset, p.Log.CleanBase, p.Log.CleanSize = ints[0], ints[1], ints[2]
	if len(f) == 7 {
		var u [3]uint64
		for i := range u {
			v, err := strconv.ParseUint(f[4+i], 10, 64)
			if err != nil {
				return "", replica.ShutdownPoint{}, fmt.Errorf("field %d: %q", 4+i, f[4+i])
			}
			u[i] = v
		}
		p.Commit = &raftlog.CommitPoint{Commit: u[0], LastIndex: u[1], LastTerm: u[2]}
	}
	return f[0], p, nil
}

// cutLastLine splits b, which ends in a newline, before its last line.
func cutLastLine(b []byte) (body []byte, last string, ok bool) {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, "", false
	}
	i := bytes.LastIndexByte(b[:len(b)-1], '\n')
	if i < 0 {
		return nil, "", false
	}
	return b[:i+1], string(b[i+1 : len(b)-1]), true
}
