package partition

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// headerReadBytes is how much of a segment one read for batch headers
// takes. A Read walks every batch header of what it returns; with small
// batches (a producer with linger 0 sends one per request) a pread per
// header cost a syscall per batch, thousands per fetch. One read of this
// size holds the headers of every batch that starts inside it.
const headerReadBytes = 16 << 10

// onHeaderRead, if set, runs before every read of batch headers from a
// segment file: tests set it to stand for a disk that is slow to answer.
var onHeaderRead atomic.Pointer[func(path string)]

func headerReadHook(path string) {
	if h := onHeaderRead.Load(); h != nil {
		(*h)(path)
	}
}

var headerBufs = sync.Pool{New: func() any { b := make([]byte, headerReadBytes); return &b }}

// headerReader reads batch headers of one segment file through a window of
// headerReadBytes.
type headerReader struct {
	buf    *[]byte
	f      *os.File
	size   int64 // the segment's published size: nothing past it is read
	at     int64 // file position of window[0]
	window []byte
	// large is set once a batch too big to share a window came by: the
	// next read then takes the header alone, not a window of bytes that
	// sendfile sends anyway.
	large bool
}

func newHeaderReader() *headerReader {
	return &headerReader{buf: headerBufs.Get().(*[]byte)}
}

func (r *headerReader) free() { headerBufs.Put(r.buf) }

// reset points the reader at another segment file.
func (r *headerReader) reset(f *os.File, size int64) {
	r.f, r.size, r.at, r.window, r.large = f, size, 0, nil, false
}

// headerAt parses the batch header at pos, reading a new window when pos's
// header is not wholly inside the current one.
func (r *headerReader) headerAt(pos int64) (BatchHeader, error) {
	if pos < r.at || pos+BatchHeaderSize > r.at+int64(len(r.window)) {
		n := min(int64(len(*r.buf)), r.size-pos)
		if r.large {
			n = min(n, BatchHeaderSize)
		}
		if n < BatchHeaderSize {
			return BatchHeader{}, fmt.Errorf("read batch header at %s:%d: %d bytes left in the segment", r.f.Name(), pos, max(n, 0))
		}
		headerReadHook(r.f.Name())
		if _, err := r.f.ReadAt((*r.buf)[:n], pos); err != nil {
			r.window = nil
			return BatchHeader{}, fmt.Errorf("read batch header at %s:%d: %w", r.f.Name(), pos, err)
		}
		r.at, r.window = pos, (*r.buf)[:n]
	}
	h, err := ParseBatchHeader(r.window[pos-r.at:])
	r.large = err == nil && h.Size() > headerReadBytes/2
	return h, err
}
