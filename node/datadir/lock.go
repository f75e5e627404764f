package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// LockFileName is the file in the data directory that one process at a time
// holds an exclusive flock(2) on. Two processes appending to the same
// segments would overwrite each other's acknowledged records at the same
// offsets, so a second node on a data directory must not start at all.
const LockFileName = ".lock"

// ErrLocked means another process holds the data directory's lock.
var ErrLocked = errors.New("data directory is in use by another process")

// Lock is a held lock on a data directory; the kernel drops it when
// the descriptor closes, including when the process is killed (kill -9), so
// a stale lock file never keeps a node from starting.
type Lock struct {
	f *os.File
}

// LockDataDir takes the exclusive lock on dir (which must exist), without
// waiting, and writes this process's id into the lock file so that whoever
// is refused can name the holder. Offline commands working on a stopped
// node's data directory take it too.
func LockDir(dir string) (*Lock, error) {
	path := filepath.Join(dir, LockFileName)
	// O_CLOEXEC (Go's default) keeps child processes from inheriting it.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked by %s; stop that process or give this one another --data-dir",
				ErrLocked, path, holderOf(path))
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("write lock file %s: %w", path, err)
	}
	if _, err := f.WriteAt(pid, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("write lock file %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// holderOf names the process holding the lock, from the id it wrote. The
// holder writes its id just after taking the lock, so a reader may see an
// empty file for a moment: it looks a few times before giving up.
func holderOf(path string) string {
	for range 50 {
		raw, err := os.ReadFile(path)
		if err != nil {
			return "another process (lock file unreadable: " + err.Error() + ")"
		}
		if s := strings.TrimSpace(string(raw)); s != "" {
			if _, err := strconv.Atoi(s); err == nil {
				return "pid " + s
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "another process (pid not recorded)"
}

// Unlock releases the lock. The file stays: removing it would let a process
// that opened it before the removal and one that creates it afresh both
// hold "the" lock. Safe to call more than once and on nil.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
