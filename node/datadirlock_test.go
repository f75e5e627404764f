package node

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spool-log/spool/node/datadir"
)

// TestNewRefusesLockedDataDir: a second node on a data directory in use fails
// in New, before it reads or writes anything there, naming the holder; once
// the first shuts down the directory is free again.
func TestNewRefusesLockedDataDir(t *testing.T) {
	dir := t.TempDir()
	first := startNode(t, testConfig(t, dir))
	before, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(testConfig(t, dir))
	if !errors.Is(err, datadir.ErrLocked) {
		t.Fatalf("second New on %s: %v, want datadir.ErrLocked", dir, err)
	}
	if want := "pid " + strconv.Itoa(os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name %q", err, want)
	}
	after, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("the refused node changed the data dir: %v, then %v", before, after)
	}
	stopNode(t, first)
	second, err := New(testConfig(t, dir))
	if err != nil {
		t.Fatalf("New after the first node stopped: %v", err)
	}
	if err := second.lock.Unlock(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, datadir.LockFileName))
	if err != nil || strings.TrimSpace(string(raw)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("lock file holds %q (%v), want this pid", raw, err)
	}
}
