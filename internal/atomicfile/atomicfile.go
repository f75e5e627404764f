// Package atomicfile replaces small files so that a reader, or a crash,
// sees either the old contents or the new, never a torn file: write a
// temporary file beside the target, rename it over the target.
//
// Temporary files are named ".<base>.<random>.tmp", so a directory scan
// that removes "*.tmp" leftovers after a crash (package partition's does)
// also removes these.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write replaces path with data durably: the temporary file is fsynced
// before the rename and the directory after it, so once Write returns the
// new contents survive a crash.
func Write(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, true)
}

// Replace is Write without the fsyncs: a reader never sees a torn file, but
// a crash may leave the old contents, or no file where there was none.
// For files cheap to lose and written often (one per new partition).
func Replace(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, false)
}

func write(path string, data []byte, perm os.FileMode, durable bool) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("create temp for %s: %w", path, err)
	}
	name := tmp.Name()
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("chmod %s: %w", name, err)
	}
	if durable {
		if err := tmp.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", name, err)
		}
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", name, err)
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", name, path, err)
	}
	if durable {
		return SyncDir(dir)
	}
	return nil
}

// SyncDir fsyncs a directory, which makes a rename, creation or removal of
// an entry in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

// ReadBounded reads the file at path whole if it is at most limit bytes,
// and refuses it otherwise: for files read back at start, whose size a
// damaged or foreign file must not choose.
func ReadBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than %d", path, st.Size(), limit)
	}
	return io.ReadAll(io.LimitReader(f, limit))
}
