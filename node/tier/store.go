package tier

import (
	"context"
	"errors"
	"io"
)

// ObjectStore is what tiered storage needs of an object store. Keys are
// full object names (the configured prefix included).
type ObjectStore interface {
	// Put stores size bytes from r under key, replacing any object there.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// GetRange reads length bytes of key from off (length < 0: to the end).
	GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List lists the objects whose keys start with prefix.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
}

// ObjectInfo is one listed object.
type ObjectInfo struct {
	Key  string
	Size int64
}

// ErrNotFound is a GetRange of a key the store does not hold.
var ErrNotFound = errors.New("object not found")
