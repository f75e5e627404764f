package node

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

// quarantineDirName is the quarantine's directory in DataDir. It has no
// "-<n>" suffix, so it is never taken for a partition directory.
const quarantineDirName = "quarantine"

// quarantineTimeFormat stamps entry names; the names sort by time.
const quarantineTimeFormat = "20060102T150405Z"

// defaultQuarantineRetention is how long dropped data is kept by default.
const defaultQuarantineRetention = 7 * 24 * time.Hour

// quarantineCheckInterval is how often expired entries are reclaimed.
const quarantineCheckInterval = time.Hour

func (n *Node) quarantineDir() string { return filepath.Join(n.cfg.DataDir, quarantineDirName) }

// quarantinePath is where an entry for what, dropped at now, goes: a free
// name, suffixed ".1", ".2"... if two drops of one thing share a second.
func (n *Node) quarantinePath(what string, now time.Time) (string, error) {
	qdir := n.quarantineDir()
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

// quarantineDirectory moves dir (under DataDir) into the quarantine and
// logs it at ERROR with why. A rename within one file system needs no free
// space, so it works on a full disk too.
func (n *Node) quarantineDirectory(dir, why string, fields logrus.Fields) (string, error) {
	dst, err := n.quarantinePath(filepath.Base(dir), time.Now())
	if err != nil {
		return "", err
	}
	if err := os.Rename(dir, dst); err != nil {
		return "", fmt.Errorf("quarantine %s: %w", dir, err)
	}
	if err := atomicfile.SyncDir(n.cfg.DataDir); err != nil {
		n.log.WithError(err).Warn("fsync data dir after quarantining")
	}
	n.log.WithFields(fields).WithFields(logrus.Fields{"dir": dir, "quarantine": dst, "reason": why}).
		Error("partition data moved to quarantine: " + why)
	return dst, nil
}

// QuarantineEntry is one dropped thing, as the admin API lists it.
type QuarantineEntry struct {
	Name    string    `json:"name"`
	Path    string    `json:"path"`
	Bytes   int64     `json:"bytes"`
	Dropped time.Time `json:"dropped"`
}

// Quarantine lists the quarantine, oldest first. The drop time is the one in
// the entry's name (the file's own mtime is when its data was last written).
func (n *Node) Quarantine() ([]QuarantineEntry, error) {
	entries, err := os.ReadDir(n.quarantineDir())
	if errors.Is(err, fs.ErrNotExist) {
		return []QuarantineEntry{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list quarantine: %w", err)
	}
	out := make([]QuarantineEntry, 0, len(entries))
	for _, e := range entries {
		path := filepath.Join(n.quarantineDir(), e.Name())
		q := QuarantineEntry{Name: e.Name(), Path: path, Bytes: diskUsage(path)}
		if len(e.Name()) >= len(quarantineTimeFormat) {
			q.Dropped, _ = time.Parse(quarantineTimeFormat, e.Name()[:len(quarantineTimeFormat)])
		}
		if q.Dropped.IsZero() {
			if info, err := e.Info(); err == nil {
				q.Dropped = info.ModTime().UTC()
			}
		}
		out = append(out, q)
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

// PurgeQuarantine deletes the entries dropped at or before now minus
// olderThan (every entry for zero) and returns them.
func (n *Node) PurgeQuarantine(olderThan time.Duration) ([]QuarantineEntry, error) {
	all, err := n.Quarantine()
	if err != nil {
		return nil, err
	}
	cutoff := time.Now().Add(-olderThan)
	purged := []QuarantineEntry{}
	var errs []error
	for _, q := range all {
		if q.Dropped.After(cutoff) {
			continue
		}
		if err := os.RemoveAll(q.Path); err != nil {
			errs = append(errs, fmt.Errorf("purge %s: %w", q.Path, err))
			continue
		}
		n.log.WithFields(logrus.Fields{"quarantine": q.Path, "bytes": q.Bytes, "dropped": q.Dropped}).Warn("quarantined data purged")
		purged = append(purged, q)
	}
	return purged, errors.Join(errs...)
}

// quarantineLoop reclaims entries older than Config.QuarantineRetention.
func (n *Node) quarantineLoop(ctx context.Context) {
	if n.cfg.QuarantineRetention < 0 {
		return
	}
	t := time.NewTicker(min(quarantineCheckInterval, n.cfg.QuarantineRetention))
	defer t.Stop()
	for {
		if _, err := n.PurgeQuarantine(n.cfg.QuarantineRetention); err != nil {
			n.log.WithError(err).Warn("reclaim quarantine")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
