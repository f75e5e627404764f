package partition

import (
	"errors"
	"fmt"
	"os"
	"sync"
)

// FileCache bounds how many segment and index files are open at once across
// every Log that shares it, so a node can hold many thousands of partitions.
// Files open lazily on first use and are reference counted while in use (a
// Slice being sent, an append, an index lookup); once idle they sit in an LRU
// list and the least recently used are closed whenever more than maxOpen are
// open. Files in use are never closed, so the bound is soft: it can be
// exceeded by the number of files pinned at one moment. Make one with
// NewFileCache; the zero value is not ready for use.
type FileCache struct {
	mu      sync.Mutex
	maxOpen int
	open    int
	// idle links the open, unreferenced handles through their own
	// fields (an append or read pins and unpins a file each time, and must
	// not allocate a list element for it): a ring through this sentinel,
	// most recently used first.
	idle fileHandle
}

// NewFileCache returns a cache that keeps at most maxOpen idle files open
// (at least 1).
func NewFileCache(maxOpen int) *FileCache {
	if maxOpen < 1 {
		maxOpen = 1
	}
	c := &FileCache{maxOpen: maxOpen}
	c.idle.prev, c.idle.next = &c.idle, &c.idle
	return c
}

// OpenFiles is how many files the cache holds open right now.
func (c *FileCache) OpenFiles() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open
}

// errFileGone is acquiring a file whose segment was deleted or whose log
// closed.
var errFileGone = errors.New("segment file deleted or log closed")

// fileHandle is one file that the cache may open and close behind its
// owner's back. Its fields are guarded by the cache's mutex.
type fileHandle struct {
	cache *FileCache
	path  string
	f     *os.File
	refs  int
	// prev and next link the handle into cache.idle while it is open and
	// unreferenced; nil otherwise.
	prev, next *fileHandle
	doomed     bool // removed from its log: close at the last release
}

// linkIdleLocked puts h first in the idle ring.
func (h *fileHandle) linkIdleLocked() {
	head := &h.cache.idle
	h.prev, h.next = head, head.next
	head.next.prev = h
	head.next = h
}

// unlinkIdleLocked takes h out of the idle ring if it is in it.
func (h *fileHandle) unlinkIdleLocked() {
	if h.next == nil {
		return
	}
	h.prev.next, h.next.prev = h.next, h.prev
	h.prev, h.next = nil, nil
}

func (c *FileCache) handle(path string) *fileHandle {
	return &fileHandle{cache: c, path: path}
}

// acquire opens the file if needed and pins it until release.
func (h *fileHandle) acquire() (*os.File, error) {
	c := h.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.doomed && h.f == nil {
		return nil, fmt.Errorf("open %s: %w", h.path, errFileGone)
	}
	if h.f == nil {
		f, err := os.OpenFile(h.path, os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", h.path, err)
		}
		h.f = f
		c.open++
	}
	h.unlinkIdleLocked()
	h.refs++
	c.evictLocked()
	return h.f, nil
}

// release unpins the file; an idle file may be closed later to stay in bound.
func (h *fileHandle) release() {
	c := h.cache
	c.mu.Lock()
	h.refs--
	if h.refs > 0 {
		c.mu.Unlock()
		return
	}
	if h.refs < 0 {
		c.mu.Unlock()
		panic("partition: file handle released more than acquired: " + h.path)
	}
	if h.doomed {
		f := h.detachLocked()
		c.mu.Unlock()
		closeFile(f)
		return
	}
	h.linkIdleLocked()
	c.evictLocked()
	c.mu.Unlock()
}

// forget closes the file once nobody uses it; it is never opened again. Used
// when the file is deleted or its log closes.
func (h *fileHandle) forget() {
	c := h.cache
	c.mu.Lock()
	h.doomed = true
	var f *os.File
	if h.refs == 0 {
		f = h.detachLocked()
	}
	c.mu.Unlock()
	closeFile(f)
}

// detachLocked takes the file out of the cache and returns it for the
// caller to close once the cache's mutex is released: the last close of a
// deleted segment frees its blocks, which can take many milliseconds on a
// busy disk, and every log sharing the cache would wait on the mutex.
func (h *fileHandle) detachLocked() *os.File {
	h.unlinkIdleLocked()
	f := h.f
	if f != nil {
		h.f = nil
		h.cache.open--
	}
	return f
}

func closeFile(f *os.File) {
	if f != nil {
		f.Close() // read-only use or already synced; nothing to report
	}
}

func (c *FileCache) evictLocked() {
	for c.open > c.maxOpen {
		lru := c.idle.prev
		if lru == &c.idle {
			return // everything open is pinned
		}
		// An idle file is still linked, so closing it is cheap.
		closeFile(lru.detachLocked())
	}
}
