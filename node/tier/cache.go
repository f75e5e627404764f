package tier

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
)

// CacheConfig sizes the on-disk chunk cache remote reads are served from.
type CacheConfig struct {
	// Dir holds the cached chunks; emptied when the cache starts.
	Dir string
	// MaxBytes bounds the chunks kept (chunks being sent may exceed it
	// until released).
	MaxBytes int64
	// ChunkBytes is the size of one ranged read from the store.
	ChunkBytes int64
}

// DefaultCacheConfig is a 1 GiB cache of 4 MiB chunks in dir.
func DefaultCacheConfig(dir string) CacheConfig {
	return CacheConfig{Dir: dir, MaxBytes: 1 << 30, ChunkBytes: 4 << 20}
}

// chunkKey names one chunk: an object (key) and the chunk's index in it.
type chunkKey struct {
	object string
	index  int64
}

// chunk is one cached range of an object, in its own file. ready is
// closed once the download ended (err says how); refs counts readers
// holding it (a Slice being sent); an evicted chunk's file is closed and
// removed at its last release.
type chunk struct {
	key     chunkKey
	ready   chan struct{}
	err     error
	file    *os.File
	path    string
	size    int64
	refs    int
	evicted bool
	elem    *list.Element
}

// Cache is the bounded on-disk chunk cache. Concurrent readers of a chunk
// not yet cached share one download; nobody holds mu while waiting for it.
//
// mu guards chunks, lru and used; it is never held across a store request
// or a file write.
type Cache struct {
	cfg   CacheConfig
	store ObjectStore

	mu     sync.Mutex
	chunks map[chunkKey]*chunk
	lru    *list.List // of *chunk, most recent first; only ready chunks
	used   int64
	seq    int64

	hits, misses, downloads, downloadBytes atomic.Int64
}

// NewCache starts an empty cache in cfg.Dir (removing what a previous run
// left there).
func NewCache(cfg CacheConfig, store ObjectStore) (*Cache, error) {
	if cfg.ChunkBytes <= 0 || cfg.MaxBytes < cfg.ChunkBytes {
		return nil, fmt.Errorf("chunk cache: chunk %d bytes, max %d: want 0 < chunk <= max", cfg.ChunkBytes, cfg.MaxBytes)
	}
	if err := os.RemoveAll(cfg.Dir); err != nil {
		return nil, fmt.Errorf("chunk cache: %w", err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("chunk cache: %w", err)
	}
	return &Cache{cfg: cfg, store: store, chunks: make(map[chunkKey]*chunk), lru: list.New()}, nil
}

// CacheStats are the cache's counters.
type CacheStats struct {
	Hits, Misses, Downloads, DownloadBytes, Used int64
}

// Stats are the cache's counters now.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	used := c.used
	c.mu.Unlock()
	return CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Downloads: c.downloads.Load(), DownloadBytes: c.downloadBytes.Load(), Used: used}
}

// get returns chunk index of object (objSize bytes long) pinned; the
// caller must release it.
func (c *Cache) get(ctx context.Context, object string, objSize, index int64) (*chunk, error) {
	k := chunkKey{object, index}
	c.mu.Lock()
	ch := c.chunks[k]
	if ch != nil {
		ch.refs++
		if ch.elem != nil {
			c.lru.MoveToFront(ch.elem)
		}
		c.mu.Unlock()
		c.hits.Add(1)
		select {
		case <-ch.ready:
		case <-ctx.Done():
			c.release(ch)
			return nil, ctx.Err()
		}
		if ch.err != nil {
			c.release(ch)
			return nil, ch.err
		}
		return ch, nil
	}
	c.seq++
	ch = &chunk{key: k, ready: make(chan struct{}), refs: 1, path: filepath.Join(c.cfg.Dir, strconv.FormatInt(c.seq, 10))}
	c.chunks[k] = ch
	c.mu.Unlock()
	c.misses.Add(1)

	// The download runs on its own context: a reader giving up must not
	// fail the others waiting for the same chunk.
	off := index * c.cfg.ChunkBytes
	n := min(c.cfg.ChunkBytes, objSize-off)
	err := c.download(ch, object, off, n)
	c.mu.Lock()
	if err != nil {
		ch.err = err
		delete(c.chunks, k) // the next reader tries again
	} else {
		ch.elem = c.lru.PushFront(ch)
		c.used += ch.size
		c.evictLocked()
	}
	c.mu.Unlock()
	close(ch.ready)
	if err != nil {
		c.release(ch)
		return nil, err
	}
	return ch, nil
}

func (c *Cache) download(ch *chunk, object string, off, n int64) error {
	if n <= 0 {
		return fmt.Errorf("chunk at %d of %s: past its end", off, object)
	}
	rc, err := c.store.GetRange(context.Background(), object, off, n)
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.OpenFile(ch.path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("chunk cache: %w", err)
	}
	w, err := io.Copy(f, io.LimitReader(rc, n+1))
	if err == nil && w != n {
		err = fmt.Errorf("chunk at %d of %s: %d bytes, want %d", off, object, w, n)
	}
	if err != nil {
		f.Close()
		os.Remove(ch.path)
		return err
	}
	c.downloads.Add(1)
	c.downloadBytes.Add(n)
	ch.file, ch.size = f, n
	return nil
}

// evictLocked drops the least recently used chunks while the cache is
// over its bound; one still held is closed at its last release.
func (c *Cache) evictLocked() {
	for c.used > c.cfg.MaxBytes {
		e := c.lru.Back()
		if e == nil {
			return
		}
		ch := e.Value.(*chunk)
		c.lru.Remove(e)
		ch.elem = nil
		ch.evicted = true
		c.used -= ch.size
		delete(c.chunks, ch.key)
		if ch.refs == 0 {
			ch.close()
		}
	}
}

func (c *Cache) release(ch *chunk) {
	c.mu.Lock()
	ch.refs--
	last := ch.refs == 0 && (ch.evicted || ch.err != nil)
	c.mu.Unlock()
	if last {
		ch.close()
	}
}

func (ch *chunk) close() {
	if ch.file != nil {
		ch.file.Close()
		os.Remove(ch.path)
	}
}

// readAt reads len(b) bytes of object at off through the cache (for
// headers and index entries), possibly across chunks.
func (c *Cache) readAt(ctx context.Context, object string, objSize int64, b []byte, off int64) error {
	for len(b) > 0 {
		if off >= objSize {
			return io.ErrUnexpectedEOF
		}
		idx := off / c.cfg.ChunkBytes
		ch, err := c.get(ctx, object, objSize, idx)
		if err != nil {
			return err
		}
		n, err := ch.file.ReadAt(b[:min(int64(len(b)), ch.size-(off-idx*c.cfg.ChunkBytes))], off-idx*c.cfg.ChunkBytes)
		c.release(ch)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if n == 0 {
			return io.ErrUnexpectedEOF
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}
