package tier

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/partition"
)

// Reader serves reads below the local log start from the store, through
// the chunk cache: whole batches, as file regions of cached chunks, which
// the wire layer sends with sendfile like a local segment's.
type Reader struct {
	cache  *Cache
	layout Layout
	txns   txnLists // decoded txnindex objects (Aborted)
}

// NewReader reads through cache, objects named by layout.
func NewReader(cache *Cache, layout Layout) *Reader { return &Reader{cache: cache, layout: layout} }

// ErrNotRemote: the offset is not in the store (below the remote start, or
// at or past its end).
var ErrNotRemote = errors.New("offset not in remote storage")

// maxScan bounds the batches a read walks before giving up on a segment
// (an index far too sparse, or a damaged object).
const maxScan = 1 << 20

// Read returns whole batches from the remote segment holding offset, for
// at most maxBytes except that the first batch is whole even if larger,
// none with a record at or past upTo. The Slice pins its chunks until
// Released. It stops at the segment's end: the next read goes on from
// Slice.Next (the local log, or the next remote segment).
func (r *Reader) Read(ctx context.Context, topic string, index int32, m *Manifest, offset int64, maxBytes int, upTo int64) (*partition.Slice, error) {
	s, ok := m.Find(offset)
	if !ok {
		return nil, ErrNotRemote
	}
	prefix, err := r.layout.PartitionPrefix(topic, index)
	if err != nil {
		return nil, err
	}
	dir := prefix + SegmentDir(s.Base, s.Next, s.ID)
	logKey := dir + FileKinds[fileLog]
	pos, err := r.indexPosition(ctx, dir, s, offset)
	if err != nil {
		return nil, err
	}
	// Find the batch holding offset from the indexed position.
	var hdr [recordbatch.HeaderSize]byte
	header := func(at int64) (recordbatch.Header, int64, error) {
		if at+recordbatch.HeaderSize > s.Size {
			return recordbatch.Header{}, 0, fmt.Errorf("remote segment %d of %s-%d: header at %d past its end %d", s.Base, topic, index, at, s.Size)
		}
		if err := r.cache.readAt(ctx, logKey, s.Size, hdr[:], at); err != nil {
			return recordbatch.Header{}, 0, err
		}
		h, err := recordbatch.ParseHeader(hdr[:])
		if err != nil {
			return recordbatch.Header{}, 0, fmt.Errorf("remote segment %d of %s-%d at %d: %w", s.Base, topic, index, at, err)
		}
		n := int64(h.Length) + recordbatch.LengthOverhead
		if h.Length < recordbatch.MinLength || at+n > s.Size {
			return recordbatch.Header{}, 0, fmt.Errorf("remote segment %d of %s-%d at %d: batch length %d runs off its end", s.Base, topic, index, at, h.Length)
		}
		return h, n, nil
	}
	scans := 0
	for {
		if pos >= s.Size {
			return nil, ErrNotRemote
		}
		h, n, err := header(pos)
		if err != nil {
			return nil, err
		}
		if h.LastOffset() >= offset {
			break
		}
		pos += n
		if scans++; scans > maxScan {
			return nil, fmt.Errorf("remote segment %d of %s-%d: offset %d not found", s.Base, topic, index, offset)
		}
	}
	start, end, next := pos, pos, int64(0)
	for end < s.Size {
		h, n, err := header(end)
		if err != nil {
			if end > start {
				break // send what is good; the next read reports it
			}
			return nil, err
		}
		if h.LastOffset() >= upTo || (end > start && end+n-start > int64(maxBytes)) {
			break
		}
		end += n
		next = h.LastOffset() + 1
	}
	if end == start {
		return partition.NewSlice(nil, nil), nil
	}
	return r.regions(ctx, logKey, s.Size, start, end, next)
}

// regions pins the chunks holding [start, end) of object and makes a Slice
// of their file regions.
func (r *Reader) regions(ctx context.Context, object string, size, start, end, next int64) (*partition.Slice, error) {
	cb := r.cache.cfg.ChunkBytes
	var held []*chunk
	var regs []partition.Region
	for at := start; at < end; {
		idx := at / cb
		ch, err := r.cache.get(ctx, object, size, idx)
		if err != nil {
			for _, h := range held {
				r.cache.release(h)
			}
			return nil, err
		}
		held = append(held, ch)
		off := at - idx*cb
		n := min(end-at, ch.size-off)
		regs = append(regs, partition.Region{File: ch.file, Position: off, Length: n})
		at += n
	}
	sl := partition.NewSlice(regs, func() {
		for _, h := range held {
			r.cache.release(h)
		}
	})
	sl.Next = next
	return sl, nil
}

// indexPosition is where to start looking for offset in remote segment s:
// its offset index's entry at or below offset, read through the cache, or 0.
func (r *Reader) indexPosition(ctx context.Context, dir string, s RemoteSegment, offset int64) (int64, error) {
	isize := s.FileSizes[fileIndex]
	if isize < 8 {
		return 0, nil
	}
	key := dir + FileKinds[fileIndex]
	n := int(isize / 8)
	rel := offset - s.Base
	var buf [8]byte
	var ferr error
	entry := func(i int) (uint32, uint32) {
		if ferr != nil {
			return 0, 0
		}
		if err := r.cache.readAt(ctx, key, isize, buf[:], int64(i)*8); err != nil {
			ferr = err
			return 0, 0
		}
		return binary.BigEndian.Uint32(buf[:4]), binary.BigEndian.Uint32(buf[4:])
	}
	// The first entry above rel; the one before it is the start.
	i := sort.Search(n, func(i int) bool { o, _ := entry(i); return int64(o) > rel })
	if ferr != nil {
		return 0, ferr
	}
	if i == 0 {
		return 0, nil
	}
	_, pos := entry(i - 1)
	if ferr != nil {
		return 0, ferr
	}
	if int64(pos) >= s.Size {
		return 0, nil // a damaged index is a hint only
	}
	return int64(pos), nil
}

// OffsetForTime finds the first remote batch whose max timestamp is at or
// after ts: its base offset and max timestamp; ok false when no remote
// batch is that new.
func (r *Reader) OffsetForTime(ctx context.Context, topic string, index int32, m *Manifest, ts int64) (offset, timestamp int64, ok bool, err error) {
	start := m.Start()
	for _, s := range m.Segments() {
		if s.MaxTimestamp < ts || s.Next <= start {
			continue
		}
		prefix, err := r.layout.PartitionPrefix(topic, index)
		if err != nil {
			return 0, 0, false, err
		}
		logKey := prefix + SegmentDir(s.Base, s.Next, s.ID) + FileKinds[fileLog]
		var hdr [recordbatch.HeaderSize]byte
		for pos, scans := int64(0), 0; pos+recordbatch.HeaderSize <= s.Size && scans < maxScan; scans++ {
			if err := r.cache.readAt(ctx, logKey, s.Size, hdr[:], pos); err != nil {
				return 0, 0, false, err
			}
			h, err := recordbatch.ParseHeader(hdr[:])
			if err != nil {
				return 0, 0, false, err
			}
			if h.MaxTimestamp >= ts && h.LastOffset() >= start {
				return max(h.BaseOffset, start), h.MaxTimestamp, true, nil
			}
			pos += int64(h.Length) + recordbatch.LengthOverhead
		}
	}
	return 0, 0, false, nil
}
