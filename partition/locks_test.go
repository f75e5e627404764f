package partition

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/internal/retry"
)

// slowDisk makes the next read of batch headers from a file under dir wait
// until released, standing for a disk that is slow to answer.
type slowDisk struct {
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newSlowDisk(t *testing.T, dir string) *slowDisk {
	d := &slowDisk{entered: make(chan struct{}), release: make(chan struct{})}
	hook := func(path string) {
		if strings.HasPrefix(path, dir) && d.armed.CompareAndSwap(true, false) {
			close(d.entered)
			<-d.release
		}
	}
	onHeaderRead.Store(&hook)
	t.Cleanup(func() {
		onHeaderRead.Store(nil)
		d.unblock()
	})
	return d
}

func (d *slowDisk) unblock() { d.once.Do(func() { close(d.release) }) }

// waitEntered waits until a header read is stuck in the slow disk.
func (d *slowDisk) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-d.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no header read reached the slow disk")
	}
}

// finishes runs fn in a goroutine and polls, with a deadline, until it has
// returned; it fails the test if fn is still blocked then.
func finishes(t *testing.T, what string, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	var err error
	retry.Run(t, 10*time.Second, func() error {
		select {
		case err = <-done:
			return nil
		default:
			return fmt.Errorf("%s is still blocked", what)
		}
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestReadBlockedOnDiskBlocksNoAppendNorRead(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, testConfig())
	defer l.Close()
	for i := 0; i < 20; i++ {
		mustAppend(t, l, makeBatch(int64(i), []byte(fmt.Sprint("v", i))), 0)
	}
	disk := newSlowDisk(t, dir)
	defer disk.unblock() // before l.Close, which waits for what the disk holds up
	disk.armed.Store(true)
	stuck := make(chan error, 1)
	go func() {
		s, err := l.Read(0, 1<<20, math.MaxInt64)
		if err == nil {
			if n := len(batchesIn(t, readAll(t, s))); n != 20 {
				err = fmt.Errorf("read %d batches, want 20", n)
			}
			s.Release()
		}
		stuck <- err
	}()
	disk.waitEntered(t)

	finishes(t, "append while a read waits on the disk", func() error {
		_, err := l.Append(makeBatch(100, []byte("more")), 0)
		return err
	})
	finishes(t, "second read while a read waits on the disk", func() error {
		s, err := l.Read(5, 1<<20, math.MaxInt64)
		if err != nil {
			return err
		}
		defer s.Release()
		if hs := batchesIn(t, readAll(t, s)); len(hs) != 16 || hs[0].BaseOffset != 5 {
			return fmt.Errorf("read %d batches from %v, want 16 from 5", len(hs), hs)
		}
		return nil
	})
	finishes(t, "offset for time while a read waits on the disk", func() error {
		off, _, err := l.OffsetForTime(100)
		if err == nil && off != 20 {
			err = fmt.Errorf("offset for time 100 is %d, want 20", off)
		}
		return err
	})
	disk.unblock()
	if err := <-stuck; err != nil {
		t.Fatalf("the slow read: %v", err)
	}
}

func TestTruncationBlockedOnDiskBlocksNoRead(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, testConfig())
	defer l.Close()
	for i := 0; i < 20; i++ {
		mustAppend(t, l, makeBatch(int64(i), []byte(fmt.Sprint("v", i))), 0)
	}
	disk := newSlowDisk(t, dir)
	defer disk.unblock() // before l.Close, which waits for what the disk holds up
	disk.armed.Store(true)
	truncated := make(chan error, 1)
	go func() { truncated <- l.TruncateTo(10) }()
	disk.waitEntered(t)

	finishes(t, "read while a truncation waits on the disk", func() error {
		s, err := l.Read(0, 1<<20, 10)
		if err != nil {
			return err
		}
		defer s.Release()
		if n := len(batchesIn(t, readAll(t, s))); n != 10 {
			return fmt.Errorf("read %d batches below the cut, want 10", n)
		}
		return nil
	})
	disk.unblock()
	if err := <-truncated; err != nil {
		t.Fatal(err)
	}
	if end := l.EndOffset(); end != 10 {
		t.Fatalf("end after truncation %d, want 10", end)
	}
	info := mustAppend(t, l, makeBatch(50, []byte("after")), 1)
	if info.BaseOffset != 10 {
		t.Fatalf("append after truncation at %d, want 10", info.BaseOffset)
	}
	s, err := l.Read(0, 1<<20, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	checkBatches(t, readAll(t, s), 0)
}

// checkBatches fails unless b is whole batches with sound CRCs whose offsets
// run on from the batch holding from.
func checkBatches(t testing.TB, b []byte, from int64) {
	t.Helper()
	if err := soundBatches(b, from); err != nil {
		t.Fatal(err)
	}
}

func soundBatches(b []byte, from int64) error {
	next := int64(-1)
	return recordbatch.Walk(b, func(_ []byte, h recordbatch.Header) error {
		switch {
		case next < 0 && (h.BaseOffset > from || h.LastOffset() < from):
			return fmt.Errorf("first batch holds %d to %d, not %d", h.BaseOffset, h.LastOffset(), from)
		case next >= 0 && h.BaseOffset != next:
			return fmt.Errorf("batch starts at offset %d, want %d", h.BaseOffset, next)
		}
		next = h.LastOffset() + 1
		return nil
	})
}

// TestConcurrentReadTruncateAppend runs appends, truncations, reads and
// offset-for-time lookups at once (run it under -race): a read may land
// beyond a cut made meanwhile (ErrOffsetOutOfRange) but never fails
// otherwise, and what it returns, when no truncation ran while it was read,
// is whole sound batches from the offset asked.
func TestConcurrentReadTruncateAppend(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 4 << 10 // many segments, so cuts fall inside and between them
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	var truncs atomic.Int64 // odd while a truncation runs
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
		stop.Store(true)
	}
	wg.Add(1)
	go func() { // appends and truncations, one writer at a time as a replica does
		defer wg.Done()
		defer stop.Store(true)
		rng := rand.New(rand.NewSource(1))
		for i := 0; i < 1500 && !stop.Load(); i++ {
			if i%25 == 24 {
				start, end := l.StartOffset(), l.EndOffset()
				to := start + rng.Int63n(end-start+1)
				truncs.Add(1)
				err := l.TruncateTo(to)
				truncs.Add(1)
				if err != nil {
					fail(fmt.Errorf("truncate to %d: %w", to, err))
					return
				}
				continue
			}
			n := 1 + rng.Intn(5)
			if _, err := l.Append(sizedBatch(int64(i), n, 20+rng.Intn(200)), 0); err != nil {
				fail(fmt.Errorf("append: %w", err))
				return
			}
		}
	}()
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			for !stop.Load() {
				start, end := l.StartOffset(), l.EndOffset()
				off := start + rng.Int63n(end-start+1)
				if rng.Intn(8) == 0 {
					if _, _, err := l.OffsetForTime(rng.Int63n(3000)); err != nil {
						fail(fmt.Errorf("offset for time: %w", err))
						return
					}
					continue
				}
				before := truncs.Load()
				s, err := l.Read(off, 1+rng.Intn(8<<10), math.MaxInt64)
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue // a cut came between EndOffset and Read
				}
				if err != nil {
					fail(fmt.Errorf("read at %d: %w", off, err))
					return
				}
				b, rerr := sliceBytes(s)
				s.Release()
				if before%2 == 1 || truncs.Load() != before {
					continue // a cut may have rewritten what the slice covers
				}
				if rerr != nil {
					fail(fmt.Errorf("read at %d: %w", off, rerr))
					return
				}
				if err := soundBatches(b, off); len(b) > 0 && err != nil {
					fail(fmt.Errorf("read at %d: %w", off, err))
					return
				}
			}
		}(int64(r + 2))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// sliceBytes reads a Slice's regions.
func sliceBytes(s *Slice) ([]byte, error) {
	var out []byte
	for _, r := range s.Regions {
		b := make([]byte, r.Length)
		if _, err := r.File.ReadAt(b, r.Position); err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}
