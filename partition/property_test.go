package partition

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Random batches in random groups, tiny segments and a dense index: every
// offset reads back from the batch that holds it, before and after a reopen.
func TestPropertyReadEveryOffset(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	cfg := testConfig()
	cfg.SegmentBytes = int64(500 + rng.Intn(3000))
	cfg.IndexIntervalBytes = 1 + rng.Intn(400)
	dir := t.TempDir()
	l := openLog(t, dir, cfg)

	type stored struct {
		bytes      []byte
		base, last int64
	}
	var batches []stored
	ts := int64(1_000_000)
	for len(batches) < 300 {
		var req []byte
		var group [][]byte
		for n := 1 + rng.Intn(4); n > 0; n-- {
			var recs []testRecord
			for r := 1 + rng.Intn(6); r > 0; r-- {
				rec := testRecord{value: make([]byte, rng.Intn(120)), tsDelta: int64(rng.Intn(50))}
				rng.Read(rec.value)
				if rng.Intn(3) == 0 {
					rec.key = []byte("key")
				}
				if rng.Intn(4) == 0 {
					rec.headers = [][2][]byte{{[]byte("h"), []byte("v")}}
				}
				recs = append(recs, rec)
			}
			ts += int64(rng.Intn(100)) - 20
			b := makeBatchRaw(0, ts, ts+50, int32(len(recs)), encodeRecords(recs))
			group = append(group, b)
			req = append(req, b...)
		}
		info := mustAppend(t, l, req, int32(len(batches)/50))
		off := info.BaseOffset
		pos := 0
		for _, b := range group {
			h, _ := ParseBatchHeader(req[pos:])
			if h.BaseOffset != off {
				t.Fatalf("batch stamped %d, want %d", h.BaseOffset, off)
			}
			batches = append(batches, stored{req[pos : pos+len(b)], off, h.LastOffset()})
			off = h.LastOffset() + 1
			pos += len(b)
		}
	}
	verify := func(l *Log) {
		end := l.EndOffset()
		if end != batches[len(batches)-1].last+1 {
			t.Fatalf("end %d", end)
		}
		bi := 0
		for off := int64(0); off < end; off++ {
			for batches[bi].last < off {
				bi++
			}
			maxBytes := rng.Intn(2000)
			s, err := l.Read(off, maxBytes, end)
			if err != nil {
				t.Fatalf("read %d: %v", off, err)
			}
			got := readAll(t, s)
			s.Release()
			if !bytes.HasPrefix(got, batches[bi].bytes) {
				t.Fatalf("read %d: does not start with batch %d..%d", off, batches[bi].base, batches[bi].last)
			}
			if len(got) > len(batches[bi].bytes) && len(got) > maxBytes {
				t.Fatalf("read %d: %d bytes for maxBytes %d", off, len(got), maxBytes)
			}
			// What follows the first batch is the next batches, whole.
			want := batches[bi].bytes
			for j := bi + 1; j < len(batches) && len(want) < len(got); j++ {
				want = append(append([]byte(nil), want...), batches[j].bytes...)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("read %d: %d bytes are not whole consecutive batches", off, len(got))
			}
		}
	}
	verify(l)
	if t.Failed() {
		return
	}
	l.Close()
	l = openLog(t, dir, cfg)
	verify(l)
	l.Close()
	// As if it had crashed before any flush: the walk of every segment keeps
	// everything, since all of it is whole.
	if err := os.WriteFile(filepath.Join(dir, recoveryPointFile), []byte("0\n0\n-1 -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg)
	defer l.Close()
	verify(l)
}

// Appends, reads, flushes, retention and reopened reads all at once; run
// with -race. Readers check every Slice holds whole, valid batches in order.
func TestConcurrentAppendReadRetention(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 4096
	cfg.RetentionBytes = 16 << 10
	cfg.Flush = FlushInterval
	cfg.FlushEvery = time.Millisecond
	cfg.Files = NewFileCache(4)
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	const appends = 300
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for i := 0; i < appends; i++ {
			if _, err := l.Append(sizedBatch(int64(i), 1+i%3, 64), int32(i/100)); err != nil {
				t.Errorf("append %d: %v", i, err)
				return
			}
			if i%50 == 0 {
				if _, err := l.EnforceRetention(); err != nil {
					t.Errorf("retention: %v", err)
				}
			}
		}
	}()
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				start, end := l.StartOffset(), l.EndOffset()
				if end == start {
					continue
				}
				off := start + (end-start)/2
				s, err := l.Read(off, 3000, end)
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue // retention moved the start meanwhile
				}
				if err != nil {
					t.Errorf("read %d: %v", off, err)
					return
				}
				got := readAll(t, s)
				s.Release()
				if err := ValidateBatches(got); err != nil {
					t.Errorf("read %d: %v", off, err)
					return
				}
				hs := batchesIn(t, got)
				if hs[0].BaseOffset > off || hs[0].LastOffset() < off {
					t.Errorf("read %d began at batch %d", off, hs[0].BaseOffset)
				}
				for i := 1; i < len(hs); i++ {
					if hs[i].BaseOffset != hs[i-1].LastOffset()+1 {
						t.Errorf("gap between batches %d and %d", hs[i-1].BaseOffset, hs[i].BaseOffset)
					}
				}
				if _, _, err := l.OffsetForTime(int64(off)); err != nil {
					t.Errorf("offset for time: %v", err)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := l.Flush(); err != nil {
				t.Errorf("flush: %v", err)
				return
			}
		}
	}()
	wg.Wait()
	if l.StartOffset() == 0 {
		t.Fatal("retention never ran")
	}
}
