// Package fulldisk gives tests a real full disk: a small tmpfs mounted for
// the test and a filler file that takes every free byte, so writes fail with
// ENOSPC exactly as on a full production disk. Mounting needs root; a test
// that cannot mount fails rather than skips, since a skipped disk-full test
// proves nothing.
package fulldisk

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a new directory under t.TempDir and
// unmounts it when the test ends. It fails the test if mount fails.
func Mount(t testing.TB, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("mount a %d-byte tmpfs on %s (the disk-full tests need root and mount): %v: %s", size, dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// Disk is a filled file system; Free gives the space back.
type Disk struct {
	filler string
}

// Fill writes a filler file in dir until the file system is full (ENOSPC),
// and checks that no further byte can be written.
func Fill(t testing.TB, dir string) *Disk {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("create filler: %v", err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for size := len(chunk); size > 0; {
		_, err := f.Write(chunk[:size])
		switch {
		case err == nil:
		case errors.Is(err, syscall.ENOSPC):
			size /= 2 // fill the last partial chunk too
		default:
			t.Fatalf("fill %s: %v", dir, err)
		}
	}
	probe := filepath.Join(dir, "probe")
	if err := os.WriteFile(probe, []byte("x"), 0o644); err == nil {
		t.Fatalf("%s is not full: a one-byte file could still be written", dir)
	}
	_ = os.Remove(probe)
	return &Disk{filler: path}
}

// Free removes the filler file.
func (d *Disk) Free(t testing.TB) {
	t.Helper()
	if err := os.Remove(d.filler); err != nil {
		t.Fatalf("free disk: %v", err)
	}
}
