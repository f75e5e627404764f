package partition

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spool-log/spool/internal/atomicfile"
)

// State files kept beside the segments. Each is replaced atomically: written
// to a temp file, fsynced, renamed over the old one, and the directory
// fsynced, so a crash leaves either the old or the new file whole.
const (
	recoveryPointFile = "recovery-point-checkpoint"
	leaderEpochFile   = "leader-epoch-checkpoint"
	// tempSuffix ends the temporary files of atomicfile; leftovers of a
	// crash are removed when the log is opened.
	tempSuffix = ".tmp"
)

// writeFileAtomic replaces dir/name with data durably.
func writeFileAtomic(dir, name string, data []byte) error {
	return atomicfile.Write(filepath.Join(dir, name), data, 0o644)
}

// recoveryPoint is what the recovery-point checkpoint promises: every byte
// of every segment that ends at or before Offset is on disk with its indexes.
// If the log was closed cleanly, CleanBase/CleanSize name the last segment and
// its size then, so an unchanged last segment need not be walked either.
type recoveryPoint struct {
	Offset    int64
	CleanBase int64 // -1 unless clean
	CleanSize int64
}

// The file is three lines: a version (0), the offset, and "base size" of the
// cleanly closed last segment or "-1 -1".
func (rp recoveryPoint) encode() []byte {
	return fmt.Appendf(nil, "0\n%d\n%d %d\n", rp.Offset, rp.CleanBase, rp.CleanSize)
}

// readRecoveryPoint returns a zero point (walk everything) if the file is
// missing or unreadable: distrust costs only time.
func readRecoveryPoint(dir string) recoveryPoint {
	none := recoveryPoint{CleanBase: -1}
	b, err := os.ReadFile(filepath.Join(dir, recoveryPointFile))
	if err != nil {
		return none
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 || lines[0] != "0" {
		return none
	}
	off, err1 := strconv.ParseInt(lines[1], 10, 64)
	base, size, ok := strings.Cut(lines[2], " ")
	cb, err2 := strconv.ParseInt(base, 10, 64)
	cs, err3 := strconv.ParseInt(size, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || !ok || off < 0 {
		return none
	}
	return recoveryPoint{Offset: off, CleanBase: cb, CleanSize: cs}
}

// EpochEntry says that leader epoch Epoch wrote its first record at
// StartOffset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// encodeEpochs writes Kafka's leader-epoch-checkpoint format: version 0, the
// entry count, then "epoch startOffset" lines.
func encodeEpochs(entries []EpochEntry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b.Bytes()
}

var errBadEpochFile = errors.New("malformed leader-epoch-checkpoint")

// readEpochs loads the cache; a missing file is an empty cache.
func readEpochs(dir string) ([]EpochEntry, error) {
	path := filepath.Join(dir, leaderEpochFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	line := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	}
	if v, ok := line(); !ok || v != "0" {
		return nil, fmt.Errorf("%s: %w: version", path, errBadEpochFile)
	}
	ns, _ := line()
	n, err := strconv.Atoi(ns)
	if err != nil || n < 0 || n > len(b) {
		return nil, fmt.Errorf("%s: %w: count", path, errBadEpochFile)
	}
	entries := make([]EpochEntry, 0, n)
	for i := 0; i < n; i++ {
		l, _ := line()
		es, os_, ok := strings.Cut(l, " ")
		epoch, err1 := strconv.ParseInt(es, 10, 32)
		start, err2 := strconv.ParseInt(os_, 10, 64)
		if !ok || err1 != nil || err2 != nil || epoch < 0 || start < 0 ||
			(i > 0 && (int32(epoch) <= entries[i-1].Epoch || start < entries[i-1].StartOffset)) {
			return nil, fmt.Errorf("%s: %w: entry %d", path, errBadEpochFile, i)
		}
		entries = append(entries, EpochEntry{Epoch: int32(epoch), StartOffset: start})
	}
	return entries, nil
}
