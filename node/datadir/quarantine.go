package datadir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/adminapi"
	"github.com/spool-log/spool/internal/atomicfile"
)

// Quarantine: whatever the node decides to drop (the partition directories
// of a deleted topic, a directory left by a deleted incarnation of a topic,
// bytes recovery cut from a segment) is moved under DataDir/quarantine
// rather than deleted, one entry per drop named "<UTC time>-<what>", with an
// ERROR log line naming it. A wrong decision (a stale catalog, a bug) then
// costs disk space for a while, not data. Entries are reclaimed after
// Config.QuarantineRetention, or at once by an operator through the admin
// API (`spool quarantine list|purge`).

// QuarantineDirName is the quarantine's directory in the data directory. It
// has no "-<n>" suffix, so it is never taken for a partition directory.
const QuarantineDirName = "quarantine"

// quarantineTimeFormat stamps entry names; the names sort by time.
const quarantineTimeFormat = "20060102T150405Z"

// DefaultQuarantineRetention is how long dropped data is kept by default.
const DefaultQuarantineRetention = 7 * 24 * time.Hour

// quarantineCheckInterval is how often expired entries are reclaimed.
const quarantineCheckInterval = time.Hour

// Quarantine is the quarantine of one data directory.
type Quarantine struct {
	dataDir string
	log     logrus.FieldLogger
}

// NewQuarantine is the quarantine of dataDir; it logs what it moves and
// purges to log.
func NewQuarantine(dataDir string, log logrus.FieldLogger) *Quarantine {
	return &Quarantine{dataDir: dataDir, log: log}
}

// Dir is the quarantine's directory, created on the first drop.
func (q *Quarantine) Dir() string { return filepath.Join(q.dataDir, QuarantineDirName) }

// Path is where an entry for what, dropped at now, goes: a free
// name, suffixed ".1", ".2"... if two drops of one thing share a second.
func (q *Quarantine) Path(what string, now time.Time) (string, error) {
	qdir := q.Dir()
	if err := os.MkdirAll(qdir, 0o755); err != nil {
		return "", fmt.Errorf("create quarantine %s: %w", qdir, err)
	}
	base := filepath.Join(qdir, now.UTC().Format(quarantineTimeFormat)+"-"+what)
	path := base
	for i := 1; ; i++ {
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			return path, nil
		}
		path = base + "." + strconv.Itoa(i)
	}
}

// Move moves dir (under the data directory) into the quarantine and
// logs it at ERROR with why. A rename within one file system needs no free
// space, so it works on a full disk too.
func (q *Quarantine) Move(dir, why string, fields logrus.Fields) (string, error) {
	dst, err := q.Path(filepath.Base(dir), time.Now())
	if err != nil {
		return "", err
	}
	if err := os.Rename(dir, dst); err != nil {
		return "", fmt.Errorf("quarantine %s: %w", dir, err)
	}
	if err := atomicfile.SyncDir(q.dataDir); err != nil {
		q.log.WithError(err).Warn("fsync data dir after quarantining")
	}
	q.log.WithFields(fields).WithFields(logrus.Fields{"dir": dir, "quarantine": dst, "reason": why}).
		Error("partition data moved to quarantine: " + why)
	return dst, nil
}

// Entry is one dropped thing, as the admin API lists it (adminapi's, which
// the client reads).
type Entry = adminapi.QuarantineEntry

// List lists the quarantine, oldest first. The drop time is the one in
// the entry's name (the file's own mtime is when its data was last written).
func (q *Quarantine) List() ([]Entry, error) {
	entries, err := os.ReadDir(q.Dir())
	if errors.Is(err, fs.ErrNotExist) {
		return []Entry{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list quarantine: %w", err)
	}
	out := make([]Entry, 0, len(entries))
	for _, e := range entries {
		path := filepath.Join(q.Dir(), e.Name())
		en := Entry{Name: e.Name(), Path: path, Bytes: diskUsage(path)}
		if len(e.Name()) >= len(quarantineTimeFormat) {
			en.Dropped, _ = time.Parse(quarantineTimeFormat, e.Name()[:len(quarantineTimeFormat)])
		}
		if en.Dropped.IsZero() {
			if info, err := e.Info(); err == nil {
				en.Dropped = info.ModTime().UTC()
			}
		}
		out = append(out, en)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func diskUsage(path string) int64 {
	var total int64
	_ = filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total
}

// Purge deletes the entries dropped at or before now minus
// olderThan (every entry for zero) and returns them.
func (q *Quarantine) Purge(olderThan time.Duration) ([]Entry, error) {
	all, err := q.List()
	if err != nil {
		return nil, err
	}
	cutoff := time.Now().Add(-olderThan)
	purged := []Entry{}
	var errs []error
	for _, en := range all {
		if en.Dropped.After(cutoff) {
			continue
		}
		if err := os.RemoveAll(en.Path); err != nil {
			errs = append(errs, fmt.Errorf("purge %s: %w", en.Path, err))
			continue
		}
		q.log.WithFields(logrus.Fields{"quarantine": en.Path, "bytes": en.Bytes, "dropped": en.Dropped}).Warn("quarantined data purged")
		purged = append(purged, en)
	}
	return purged, errors.Join(errs...)
}

// Reclaim purges entries older than retention until ctx ends; a negative
// retention keeps everything.
func (q *Quarantine) Reclaim(ctx context.Context, retention time.Duration) {
	if retention < 0 {
		return
	}
	t := time.NewTicker(min(quarantineCheckInterval, retention))
	defer t.Stop()
	for {
		if _, err := q.Purge(retention); err != nil {
			q.log.WithError(err).Warn("reclaim quarantine")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
