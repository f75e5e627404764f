package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/internal/recordbatch/compression"
)

// kv is one record: value nil is a tombstone, key nil a keyless record.
type kv struct{ key, value []byte }

func kvs(pairs ...string) []kv {
	var out []kv
	for i := 0; i+1 < len(pairs); i += 2 {
		r := kv{key: []byte(pairs[i]), value: []byte(pairs[i+1])}
		if pairs[i+1] == "<nil>" {
			r.value = nil
		}
		out = append(out, r)
	}
	return out
}

// keyedBatch builds a batch of recs with timestamps ts, ts+1, ..., gzip
// compressed if asked.
func keyedBatch(t testing.TB, ts int64, compress bool, recs []kv) []byte {
	t.Helper()
	trs := make([]testRecord, len(recs))
	for i, r := range recs {
		trs[i] = testRecord{key: r.key, value: r.value, tsDelta: int64(i)}
	}
	payload := encodeRecords(trs)
	attrs := int16(0)
	if compress {
		var err error
		if payload, err = (compression.Codecs{}).Compress(recordbatch.CompressionGzip, nil, payload); err != nil {
			t.Fatal(err)
		}
		attrs = recordbatch.CompressionGzip
	}
	return makeBatchRaw(attrs, ts, ts+int64(len(recs))-1, int32(len(recs)), payload)
}

// logRecord is one record as a reader sees it.
type logRecord struct {
	offset     int64
	ts         int64
	key, value string
	tombstone  bool
}

// readRecords reads the whole log as a consumer would, checking that every
// batch is whole and valid, that offsets ascend, and that each batch lies
// inside its offset range.
func readRecords(t testing.TB, l *Log) ([]logRecord, []BatchHeader) {
	t.Helper()
	var out []logRecord
	var hs []BatchHeader
	next := l.StartOffset()
	end := l.EndOffset()
	for next < end {
		s, err := l.Read(next, 1<<20, end)
		if err != nil {
			t.Fatal(err)
		}
		b := readAll(t, s)
		s.Release()
		if len(b) == 0 {
			t.Fatalf("read at %d of [%d, %d) returned nothing", next, l.StartOffset(), end)
		}
		rs, bh := parseLogBytes(t, b, next)
		out = append(out, rs...)
		hs = append(hs, bh...)
		next = bh[len(bh)-1].LastOffset() + 1
	}
	return out, hs
}

// parseLogBytes checks and decodes batches read from offset from.
func parseLogBytes(t testing.TB, b []byte, from int64) ([]logRecord, []BatchHeader) {
	t.Helper()
	var out []logRecord
	var hs []BatchHeader
	prevLast := int64(-1)
	for pos := 0; pos < len(b); {
		h, bad := recordbatch.Check(b[pos:], true)
		if bad != nil {
			t.Fatalf("batch at byte %d: %v", pos, bad)
		}
		if h.BaseOffset <= prevLast {
			t.Fatalf("batch at %d after one ending at %d", h.BaseOffset, prevLast)
		}
		if len(hs) == 0 && h.LastOffset() < from {
			t.Fatalf("read from %d returned a batch ending at %d", from, h.LastOffset())
		}
		recs, err := recordbatch.Records(nil, b[pos:pos+int(h.Size())], h, compression.Codecs{}, maxDecompressedBytes)
		if err != nil {
			t.Fatalf("batch at %d: %v", h.BaseOffset, err)
		}
		for _, r := range recs {
			out = append(out, logRecord{offset: h.BaseOffset + r.OffsetDelta, ts: h.FirstTimestamp + r.TimestampDelta, key: string(r.Key), value: string(r.Value), tombstone: r.Value == nil})
		}
		hs = append(hs, h)
		prevLast = h.LastOffset()
		pos += int(h.Size())
	}
	return out, hs
}

func compactConfig() Config {
	c := testConfig()
	c.Compact = true
	c.RetentionAge, c.RetentionBytes = -1, -1
	c.SegmentBytes = 2048
	c.Codecs = compression.Codecs{}
	return c
}

func mustClean(t testing.TB, l *Log) CleanStats {
	t.Helper()
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	st, err := l.Clean(l.EndOffset(), 1<<20)
	if err != nil {
		t.Fatalf("clean: %v", err)
	}
	return st
}

// newestByKey is what a full compaction must leave: the newest record of
// each key, by offset.
func newestByKey(recs []logRecord) map[string]logRecord {
	m := map[string]logRecord{}
	for _, r := range recs {
		if old, ok := m[r.key]; !ok || r.offset > old.offset {
			m[r.key] = r
		}
	}
	return m
}

func TestCleanKeepsNewestRecordPerKey(t *testing.T) {
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", compress), func(t *testing.T) {
			dir := t.TempDir()
			l := openLog(t, dir, compactConfig())
			rng := rand.New(rand.NewPCG(1, 2))
			for i := 0; i < 600; i++ {
				n := 1 + rng.IntN(4)
				var recs []kv
				for j := 0; j < n; j++ {
					recs = append(recs, kv{key: fmt.Appendf(nil, "key-%02d", rng.IntN(20)), value: fmt.Appendf(nil, "value-%d-%d", i, j)})
				}
				mustAppend(t, l, keyedBatch(t, int64(1000+i), compress, recs), -1)
			}
			before, _ := readRecords(t, l)
			start, end, size, segs := l.StartOffset(), l.EndOffset(), l.Size(), l.SegmentCount()
			activeBase := l.segs[len(l.segs)-1].base
			want := newestByKey(before)

			st := mustClean(t, l)
			after, hs := readRecords(t, l)
			if l.StartOffset() != start || l.EndOffset() != end {
				t.Fatalf("offsets moved: [%d, %d) became [%d, %d)", start, end, l.StartOffset(), l.EndOffset())
			}
			if l.Size() >= size/2 {
				t.Fatalf("size %d -> %d: cleaning freed too little", size, l.Size())
			}
			t.Logf("%d segments, %d bytes, %d records -> %d segments, %d bytes, %d records; stats %+v",
				segs, size, len(before), l.SegmentCount(), l.Size(), len(after), st)
			if got := newestByKey(after); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("newest record per key changed:\n got %v\nwant %v", got, want)
			}
			// Below the active segment each key appears once, and only as its
			// newest record overall or its newest below the active segment.
			seen := map[string]int64{}
			for _, r := range after {
				if r.offset >= activeBase {
					continue
				}
				if prev, dup := seen[r.key]; dup {
					t.Fatalf("key %s kept at %d and %d", r.key, prev, r.offset)
				}
				seen[r.key] = r.offset
			}
			// Every record read existed at the same offset before, with its
			// timestamp, and every batch kept its compression.
			byOffset := map[int64]logRecord{}
			for _, r := range before {
				byOffset[r.offset] = r
			}
			for _, r := range after {
				if byOffset[r.offset] != r {
					t.Fatalf("record at %d is %+v, was %+v", r.offset, r, byOffset[r.offset])
				}
			}
			for _, h := range hs {
				if compress != (h.Compression() == recordbatch.CompressionGzip) {
					t.Fatalf("batch at %d has codec %d", h.BaseOffset, h.Compression())
				}
			}
			// The cleaned log survives a clean close and, separately, a crash
			// that loses the recovery point (every segment walked).
			files := snapshotDir(t, dir)
			l.Close()
			l = openLog(t, dir, compactConfig())
			if again, _ := readRecords(t, l); fmt.Sprint(again) != fmt.Sprint(after) {
				t.Fatal("records changed across a clean close")
			}
			l.Close()
			crashed := filepath.Join(t.TempDir(), "crashed")
			delete(files, recoveryPointFile)
			restoreDir(t, crashed, files, nil)
			for _, cfg := range []Config{compactConfig(), testConfig()} {
				l = openLog(t, crashed, cfg) // a topic no longer compacted still reads its cleaned segments
				if again, _ := readRecords(t, l); fmt.Sprint(again) != fmt.Sprint(after) {
					t.Fatalf("records changed across recovery (compact=%v)", cfg.Compact)
				}
				l.Close()
				restoreDir(t, crashed, files, nil)
			}
		})
	}
}

// TestCleanedBatchShape checks a rebuilt batch against Kafka's filterTo: the
// base offset and lastOffsetDelta stay although the first and last records
// are gone, record offsets are unchanged, and the CRC is valid.
func TestCleanedBatchShape(t *testing.T) {
	l := openLog(t, t.TempDir(), compactConfig())
	defer l.Close()
	mustAppend(t, l, keyedBatch(t, 100, false, kvs("a", "1", "b", "1", "c", "1", "d", "1")), -1)
	mustAppend(t, l, keyedBatch(t, 200, false, kvs("a", "2", "d", "2")), -1)
	l.SetConfig(func() Config { c := compactConfig(); c.SegmentBytes = 1; return c }())
	mustAppend(t, l, keyedBatch(t, 300, false, kvs("z", "1")), -1) // rolls: the two batches above are closed
	mustClean(t, l)
	recs, hs := readRecords(t, l)
	if len(hs) != 3 {
		t.Fatalf("%d batches, want 3", len(hs))
	}
	h := hs[0]
	if h.BaseOffset != 0 || h.LastOffsetDelta != 3 || h.NumRecords != 2 {
		t.Fatalf("first batch: base %d lastOffsetDelta %d records %d, want 0, 3, 2", h.BaseOffset, h.LastOffsetDelta, h.NumRecords)
	}
	if h.FirstTimestamp != 101 || h.MaxTimestamp != 102 {
		t.Fatalf("first batch timestamps %d..%d, want 101..102", h.FirstTimestamp, h.MaxTimestamp)
	}
	got := fmt.Sprint(recs)
	want := "[{1 101 b 1 false} {2 102 c 1 false} {4 200 a 2 false} {5 201 d 2 false} {6 300 z 1 false}]"
	if got != want {
		t.Fatalf("records %s, want %s", got, want)
	}
}

func TestTombstonesExpireAfterDeleteRetention(t *testing.T) {
	clock := &fakeClock{now: time.UnixMilli(1_000_000)}
	cfg := compactConfig()
	cfg.Clock = clock.Now
	cfg.DeleteRetention = time.Hour
	cfg.SegmentBytes = 1 // every batch gets its own segment
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	mustAppend(t, l, keyedBatch(t, 1, false, kvs("a", "1", "b", "1")), -1)
	mustAppend(t, l, keyedBatch(t, 2, false, kvs("a", "<nil>")), -1)
	mustAppend(t, l, keyedBatch(t, 3, false, kvs("c", "1")), -1) // active
	if !l.NeedsCleaning() {
		t.Fatal("an uncleaned log with closed segments does not need cleaning")
	}
	mustClean(t, l)
	recs, hs := readRecords(t, l)
	if got := fmt.Sprint(recs); got != "[{1 2 b 1 false} {2 2 a  true} {3 3 c 1 false}]" {
		t.Fatalf("after the first cleaning: %s", got)
	}
	if !hs[1].DeleteHorizon() || hs[1].FirstTimestamp != clock.now.Add(time.Hour).UnixMilli() {
		t.Fatalf("tombstone batch has attributes %#x, firstTimestamp %d: no delete horizon", hs[1].Attributes, hs[1].FirstTimestamp)
	}
	clock.Advance(59 * time.Minute)
	if l.NeedsCleaning() {
		t.Fatal("needs cleaning before the delete horizon")
	}
	mustClean(t, l)
	if recs, _ := readRecords(t, l); len(recs) != 3 {
		t.Fatalf("tombstone removed before its horizon: %v", recs)
	}
	clock.Advance(time.Minute)
	if !l.NeedsCleaning() {
		t.Fatal("does not need cleaning once the delete horizon passed")
	}
	st := mustClean(t, l)
	recs, _ = readRecords(t, l)
	if got := fmt.Sprint(recs); got != "[{1 2 b 1 false} {3 3 c 1 false}]" || st.TombstonesRemoved != 1 {
		t.Fatalf("after the horizon: %s, stats %+v", got, st)
	}
	if l.NeedsCleaning() || l.StartOffset() != 0 {
		t.Fatalf("needs cleaning %v, start %d", l.NeedsCleaning(), l.StartOffset())
	}
}

// TestCleanSwapCrashRecovers captures the directory after every step of a
// cleaning that merges segments, and opens each capture as a crash would
// leave it: every one must read as all-old or all-new, never a mix.
func TestCleanSwapCrashRecovers(t *testing.T) {
	cfg := compactConfig()
	cfg.SegmentBytes = 400
	dir := filepath.Join(t.TempDir(), "log")
	l := openLog(t, dir, cfg)
	for i := 0; i < 60; i++ {
		mustAppend(t, l, keyedBatch(t, int64(i), false, []kv{{fmt.Appendf(nil, "k%d", i%13), fmt.Appendf(nil, "v%d", i)}}), -1)
	}
	mustClean(t, l) // small cleaned segments, which the next cleaning merges
	for i := 0; i < 30; i++ {
		mustAppend(t, l, keyedBatch(t, int64(200+i), false, []kv{{fmt.Appendf(nil, "k%d", i%5), fmt.Appendf(nil, "w%d", i)}}), -1)
	}
	l.Flush()
	oldRecs, _ := readRecords(t, l)
	oldCleaned := l.cleanedTo

	type capture struct {
		step  string
		files map[string][]byte
	}
	var captures []capture
	testHookSwapStep = func(step string) { captures = append(captures, capture{step, snapshotDir(t, dir)}) }
	st := mustClean(t, l)
	testHookSwapStep = nil
	if st.SegmentsWritten == 0 || st.Segments <= st.SegmentsWritten {
		t.Fatalf("no merging cleaning to crash in: %+v", st)
	}
	newRecs, _ := readRecords(t, l)
	newCleaned := l.cleanedTo
	l.Close()
	if fmt.Sprint(oldRecs) == fmt.Sprint(newRecs) {
		t.Fatal("the cleaning changed nothing")
	}
	// Each group's swap must be atomic: every capture reads as the log
	// before the cleaning or as it stood after some group's last step, and
	// these states follow one another in order.
	// A state is the records read and the cleaner checkpoint: it must never
	// claim cleaned what the files do not hold cleaned.
	type state struct {
		records string
		cleaned int64
	}
	open := func(c capture) state {
		crashed := filepath.Join(t.TempDir(), "crashed")
		delete(c.files, recoveryPointFile) // and the crash lost the recovery point: walk everything
		restoreDir(t, crashed, c.files, nil)
		l := openLog(t, crashed, cfg)
		recs, _ := readRecords(t, l)
		got := state{fmt.Sprint(recs), l.cleanedTo}
		names := snapshotDir(t, crashed)
		l.Close()
		for name := range names {
			if strings.HasSuffix(name, cleanedSuffix) || strings.HasSuffix(name, swapSuffix) {
				t.Fatalf("after crash at %q: %s left behind", c.step, name)
			}
		}
		return got
	}
	stable := []state{{fmt.Sprint(oldRecs), oldCleaned}}
	for _, c := range captures {
		if strings.HasPrefix(c.step, "rename ") && strings.HasSuffix(c.step, logSuffix) { // the last step of a swap
			stable = append(stable, open(c))
		}
	}
	swaps := len(stable) - 1
	stable = slices.Compact(stable)
	// (A last group with nothing to drop is not swapped: the checkpoint
	// then moves past it only when the cleaning ends.)
	if last := stable[len(stable)-1]; last.records != fmt.Sprint(newRecs) || last.cleaned > newCleaned {
		t.Fatal("the last swap's state is not the cleaned log")
	}
	at := 0
	for _, c := range captures {
		got := open(c)
		i := at
		for i < len(stable) && stable[i] != got {
			i++
		}
		if i > at+1 || i == len(stable) {
			t.Fatalf("after crash at %q (state %d): records are not those of the state before or after the swap:\n%v", c.step, at, got)
		}
		at = i
	}
	if swaps != st.SegmentsWritten || len(stable) < 3 || len(captures) < 8*swaps {
		t.Fatalf("%d captures, %d distinct states for %d swaps (%d written)", len(captures), len(stable), swaps, st.SegmentsWritten)
	}
}

// TestReadsDuringCleaning keeps readers and an appender busy while the log
// is cleaned over and over: every read returns whole valid batches in
// offset order, and a Slice taken before a swap still reads its old bytes.
func TestReadsDuringCleaning(t *testing.T) {
	cfg := compactConfig()
	cfg.SegmentBytes = 1024
	cfg.Files = NewFileCache(4)
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	appendSome := func(from, n int) {
		for i := from; i < from+n; i++ {
			mustAppend(t, l, keyedBatch(t, int64(i), i%3 == 0, []kv{{fmt.Appendf(nil, "k%d", i%11), fmt.Appendf(nil, "v%d", i)}}), -1)
		}
	}
	appendSome(0, 200)
	held, err := l.Read(0, 1<<20, l.EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	heldBytes := readAll(t, held)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 9))
			for {
				select {
				case <-stop:
					return
				default:
				}
				start, end := l.StartOffset(), l.EndOffset()
				off := start + rng.Int64N(end-start)
				s, err := l.Read(off, 4096, end)
				if err != nil {
					errs <- err
					return
				}
				var b []byte
				for _, reg := range s.Regions {
					p := make([]byte, reg.Length)
					if _, err := reg.File.ReadAt(p, reg.Position); err != nil {
						errs <- fmt.Errorf("read region: %w", err)
						s.Release()
						return
					}
					b = append(b, p...)
				}
				s.Release()
				if len(b) == 0 {
					errs <- fmt.Errorf("read at %d of [%d, %d) empty", off, start, end)
					return
				}
				func() {
					defer func() {
						if r := recover(); r != nil {
							errs <- fmt.Errorf("%v", r)
						}
					}()
					parseLogBytes(panicTB{t}, b, off)
				}()
			}
		}(uint64(r))
	}
	for round := 0; round < 6; round++ {
		appendSome(200+round*50, 50)
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Clean(l.EndOffset(), 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := readAll(t, held); !bytes.Equal(got, heldBytes) {
		t.Fatal("a Slice held across cleanings changed")
	}
	parseLogBytes(t, heldBytes, 0)
	held.Release()
	recs, _ := readRecords(t, l)
	keys := map[string]bool{}
	for _, r := range recs {
		keys[r.key] = true
	}
	if len(keys) != 11 {
		t.Fatalf("%d keys survive, want 11", len(keys))
	}
}

// panicTB turns Fatalf into a panic, for checks run off the test goroutine.
type panicTB struct{ testing.TB }

func (panicTB) Helper() {}
func (p panicTB) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
func (p panicTB) Fatal(args ...any) { panic(fmt.Sprint(args...)) }

func TestCompactedLogRefusesKeylessRecords(t *testing.T) {
	cfg := compactConfig()
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	for _, compress := range []bool{false, true} {
		b := keyedBatch(t, 1, compress, []kv{{[]byte("k"), []byte("v")}, {nil, []byte("v")}})
		_, err := l.Append(b, -1)
		var be *BatchError
		if !errors.As(err, &be) || be.Kind != Invalid || !strings.Contains(be.Reason, "without a key") {
			t.Fatalf("gzip=%v: keyless record appended: %v", compress, err)
		}
	}
	// An empty key is a key.
	mustAppend(t, l, keyedBatch(t, 1, false, []kv{{[]byte{}, []byte("v")}}), -1)
	cfg.Codecs = nil
	l.SetConfig(cfg)
	if _, err := l.Append(keyedBatch(t, 1, true, kvs("k", "v")), -1); err == nil {
		t.Fatal("a compressed batch was appended to a compacted log with no codecs to check its keys")
	}
	// A log that is not compacted takes keyless records.
	plain := openLog(t, t.TempDir(), testConfig())
	defer plain.Close()
	mustAppend(t, plain, keyedBatch(t, 1, false, []kv{{nil, []byte("v")}}), -1)
}

// TestCleanMapBound cleans with a map too small for the dirty keys: each
// cleaning covers part of the dirty log, and repeated cleanings finish it.
func TestCleanMapBound(t *testing.T) {
	l := openLog(t, t.TempDir(), compactConfig())
	defer l.Close()
	for i := 0; i < 300; i++ {
		mustAppend(t, l, keyedBatch(t, int64(i), false, []kv{{fmt.Appendf(nil, "key-%03d", i%150), []byte("v")}}), -1)
	}
	before, _ := readRecords(t, l)
	l.Flush()
	var ends []int64
	for i := 0; i < 50 && l.NeedsCleaning(); i++ {
		st, err := l.Clean(l.EndOffset(), 64*20)
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, st.DirtyTo)
	}
	if len(ends) < 2 || !sort.SliceIsSorted(ends, func(i, j int) bool { return ends[i] < ends[j] }) {
		t.Fatalf("dirty ends %v: want several ascending cleanings", ends)
	}
	after, _ := readRecords(t, l)
	if fmt.Sprint(newestByKey(after)) != fmt.Sprint(newestByKey(before)) {
		t.Fatal("newest record per key changed")
	}
}

// TestTruncateBelowCleanedOffset cuts a cleaned log and appends again: the
// new records count as dirty and are cleaned against the old ones.
func TestTruncateBelowCleanedOffset(t *testing.T) {
	cfg := compactConfig()
	cfg.SegmentBytes = 300
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	for i := 0; i < 60; i++ {
		mustAppend(t, l, keyedBatch(t, int64(i), false, []kv{{fmt.Appendf(nil, "k%d", i%4), fmt.Appendf(nil, "v%d", i)}}), -1)
	}
	mustClean(t, l)
	if err := l.TruncateTo(30); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 60; i++ {
		mustAppend(t, l, keyedBatch(t, int64(100+i), false, []kv{{fmt.Appendf(nil, "k%d", i%4), fmt.Appendf(nil, "w%d", i)}}), -1)
	}
	mustClean(t, l)
	recs, _ := readRecords(t, l)
	for _, r := range recs {
		if strings.HasPrefix(r.value, "v") && r.offset < l.segs[len(l.segs)-1].base {
			t.Fatalf("old value %+v survived newer ones after truncation", r)
		}
	}
}

// A transactional record does not shadow an older record of its key
// until its transaction's commit marker: an aborted or still open one
// never does; a later plain record shadows it; an aborted one is removed.
func TestCleanTransactionalRecords(t *testing.T) {
	l := openLog(t, t.TempDir(), compactConfig())
	defer l.Close()
	attrs := func(b []byte, set uint16) []byte {
		a := binary.BigEndian.Uint16(b[recordbatch.OffAttributes:]) | set
		binary.BigEndian.PutUint16(b[recordbatch.OffAttributes:], a)
		recordbatch.SetCRC(b)
		return b
	}
	txn := func(ts int64, pairs ...string) []byte {
		return attrs(keyedBatch(t, ts, false, kvs(pairs...)), recordbatch.AttrTransactional)
	}
	marker := func(ts int64, commit bool) []byte {
		typ := "\x00\x00\x00\x00"
		if commit {
			typ = "\x00\x00\x00\x01"
		}
		return attrs(keyedBatch(t, ts, false, kvs(typ, "\x00\x00\x00\x00\x00\x00")), recordbatch.AttrTransactional|recordbatch.AttrControl)
	}
	mustAppend(t, l, keyedBatch(t, 1, false, kvs("a", "plain-a", "b", "plain-b", "c", "plain-c", "d", "plain-d")), -1)
	mustAppend(t, l, txn(2, "a", "aborted-a", "b", "aborted-b"), -1)
	mustAppend(t, l, marker(3, false), -1)
	mustAppend(t, l, keyedBatch(t, 4, false, kvs("b", "plain-b2")), -1)
	mustAppend(t, l, txn(5, "c", "committed-c"), -1)
	mustAppend(t, l, marker(6, true), -1)
	mustAppend(t, l, txn(7, "d", "open-d"), -1)
	// Fill the segment so the records above are in a closed one.
	for i := range 3 {
		mustAppend(t, l, keyedBatch(t, int64(8+i), false, kvs("z", strings.Repeat("x", 1500))), -1)
	}
	mustClean(t, l)
	recs, _ := readRecords(t, l)
	var got []string
	for _, r := range recs {
		if r.key != "z" && !strings.HasPrefix(r.key, "\x00") {
			got = append(got, r.key+"="+r.value)
		}
	}
	want := []string{"a=plain-a", "d=plain-d", "b=plain-b2", "c=committed-c", "d=open-d"}
	if !slices.Equal(got, want) {
		t.Fatalf("after cleaning:\n got %v\nwant %v", got, want)
	}
	_, hs := readRecords(t, l)
	markers := 0
	for _, h := range hs {
		if h.Control() {
			markers++
		}
	}
	if markers != 2 {
		t.Fatalf("%d markers kept, want 2", markers)
	}
}

// txnBatch marks b transactional (and a control batch if control) of
// producer pid.
func txnBatch(b []byte, pid int64, control bool) []byte {
	a := binary.BigEndian.Uint16(b[recordbatch.OffAttributes:]) | recordbatch.AttrTransactional
	if control {
		a |= recordbatch.AttrControl
	}
	binary.BigEndian.PutUint16(b[recordbatch.OffAttributes:], a)
	binary.BigEndian.PutUint64(b[recordbatch.OffProducerID:], uint64(pid))
	recordbatch.SetCRC(b)
	return b
}

func markerBatch(t testing.TB, ts, pid int64, commit bool) []byte {
	typ := "\x00\x00\x00\x00"
	if commit {
		typ = "\x00\x00\x00\x01"
	}
	return txnBatch(keyedBatch(t, ts, false, kvs(typ, "\x00\x00\x00\x00\x00\x00")), pid, true)
}

// TestCleanAbortedTransactionsAndMarkers: the cleaner removes aborted
// transactions' records, keeps committed and open ones (an open one is
// one whose marker is not in the cleaned range, even if it later aborts),
// keeps a marker while a record of its transaction is left, and removes it
// on a pass past the delete horizon stamped when its transaction emptied.
func TestCleanAbortedTransactionsAndMarkers(t *testing.T) {
	clock := &fakeClock{now: time.UnixMilli(1_000_000)}
	cfg := compactConfig()
	cfg.Clock = clock.Now
	cfg.DeleteRetention = time.Hour
	cfg.SegmentBytes = 1 // every batch gets its own segment
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	const p1, p2, p3 = 11, 22, 33
	mustAppend(t, l, keyedBatch(t, 1, false, kvs("a", "plain-a", "b", "plain-b", "c", "plain-c", "d", "plain-d")), -1) // 0-3
	mustAppend(t, l, txnBatch(keyedBatch(t, 2, true, kvs("a", "aborted-a", "b", "aborted-b")), p1, false), -1)         // 4-5
	mustAppend(t, l, txnBatch(keyedBatch(t, 3, false, kvs("c", "committed-c")), p2, false), -1)                        // 6
	mustAppend(t, l, markerBatch(t, 4, p1, false), -1)                                                                 // 7
	mustAppend(t, l, txnBatch(keyedBatch(t, 5, false, kvs("d", "open-d")), p3, false), -1)                             // 8
	mustAppend(t, l, markerBatch(t, 6, p2, true), -1)                                                                  // 9
	mustAppend(t, l, markerBatch(t, 7, p3, false), -1)                                                                 // 10: active, not cleaned
	state := func() (string, int) {
		recs, hs := readRecords(t, l)
		var got []string
		for _, r := range recs {
			if !strings.HasPrefix(r.key, "\x00") && r.key != "z" {
				got = append(got, r.key+"="+r.value)
			}
		}
		markers := 0
		for _, h := range hs {
			if h.Control() {
				markers++
			}
		}
		return strings.Join(got, " "), markers
	}
	st := mustClean(t, l)
	if got, m := state(); got != "a=plain-a b=plain-b d=plain-d c=committed-c d=open-d" || m != 3 || st.AbortedRemoved != 2 || st.MarkersRemoved != 0 {
		t.Fatalf("first cleaning: %q, %d markers, stats %+v", got, m, st)
	}
	_, hs := readRecords(t, l)
	for _, h := range hs {
		if h.Control() && h.BaseOffset == 7 && (!h.DeleteHorizon() || h.FirstTimestamp != clock.now.Add(time.Hour).UnixMilli()) {
			t.Fatalf("emptied abort marker: attributes %#x, firstTimestamp %d: no delete horizon", h.Attributes, h.FirstTimestamp)
		}
		if h.Control() && h.BaseOffset == 9 && h.DeleteHorizon() {
			t.Fatal("commit marker with a record left got a delete horizon")
		}
	}
	clock.Advance(59 * time.Minute)
	mustClean(t, l)
	if _, m := state(); m != 3 {
		t.Fatalf("%d markers before the horizon, want 3", m)
	}
	clock.Advance(time.Minute)
	if !l.NeedsCleaning() {
		t.Fatal("does not need cleaning once a marker's delete horizon passed")
	}
	// p3's abort marker is now closed, so its transaction can be judged;
	// c=plain-c2 shadows p2's committed record.
	mustAppend(t, l, keyedBatch(t, 8, false, kvs("c", "plain-c2")), -1) // 11
	mustAppend(t, l, keyedBatch(t, 9, false, kvs("z", "z")), -1)        // 12: active
	st = mustClean(t, l)
	if got, m := state(); got != "a=plain-a b=plain-b d=plain-d c=plain-c2" || m != 2 || st.AbortedRemoved != 1 || st.MarkersRemoved != 1 {
		t.Fatalf("second cleaning: %q, %d markers, stats %+v", got, m, st)
	}
	clock.Advance(time.Hour)
	st = mustClean(t, l)
	if got, m := state(); got != "a=plain-a b=plain-b d=plain-d c=plain-c2" || m != 0 || st.MarkersRemoved != 2 {
		t.Fatalf("third cleaning: %q, %d markers, stats %+v", got, m, st)
	}
	if l.NeedsCleaning() || l.StartOffset() != 0 || l.EndOffset() != 13 {
		t.Fatalf("needs cleaning %v, offsets [%d, %d)", l.NeedsCleaning(), l.StartOffset(), l.EndOffset())
	}
}
