package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestAppendAssignsOffsetsAndReadsBack(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig())
	defer l.Close()
	var all []byte
	for i := 0; i < 5; i++ {
		b := makeBatch(int64(1000+i), []byte("a"), []byte("b"), []byte("c"))
		info := mustAppend(t, l, b, 3)
		if info.BaseOffset != int64(3*i) || info.LastOffset != int64(3*i+2) || info.RecordCount != 3 || info.Bytes != len(b) || info.LogAppendTime != -1 {
			t.Fatalf("append %d: %+v", i, info)
		}
		h, _ := ParseBatchHeader(b)
		if h.BaseOffset != int64(3*i) || h.PartitionLeaderEpoch != 3 {
			t.Fatalf("batch not stamped in place: %+v", h)
		}
		if err := ValidateBatches(b); err != nil {
			t.Fatalf("stamped batch no longer valid: %v", err)
		}
		all = append(all, b...)
	}
	if l.StartOffset() != 0 || l.EndOffset() != 15 {
		t.Fatalf("start %d end %d", l.StartOffset(), l.EndOffset())
	}
	s, err := l.Read(0, 1<<20, l.EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, s); !bytes.Equal(got, all) {
		t.Fatalf("read %d bytes, want the %d appended", len(got), len(all))
	}
	s.Release()
	s.Release() // idempotent
}

func TestAppendAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, testConfig())
	defer l.Close()
	mustAppend(t, l, makeBatch(1, []byte("x")), 0)
	good := makeBatch(2, []byte("y"))
	bad := makeBatch(3, []byte("z"))
	bad[len(bad)-1] ^= 0xff
	req := append(append([]byte(nil), good...), bad...)
	_, err := l.Append(req, 0)
	var be *BatchError
	if !errors.As(err, &be) || be.Kind != Corrupt || be.Offset != len(good)+offCRC {
		t.Fatalf("got %v, want corrupt batch at %d", err, len(good)+offCRC)
	}
	if l.EndOffset() != 1 {
		t.Fatalf("end offset %d after refused append", l.EndOffset())
	}
	if n := fileSize(t, segmentName(dir, 0, logSuffix)); n != int64(len(makeBatch(1, []byte("x")))) {
		t.Fatalf("log file has %d bytes: the refused append reached disk", n)
	}
	if !bytes.Equal(req[:len(good)], good) {
		t.Fatal("a refused append rewrote the request")
	}
}

func TestLogAppendTime(t *testing.T) {
	clock := &fakeClock{now: time.UnixMilli(5_000_000)}
	cfg := testConfig()
	cfg.LogAppendTime = true
	cfg.Clock = clock.Now
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	b := makeBatch(10, []byte("a"), []byte("b"))
	info := mustAppend(t, l, b, -1)
	if info.LogAppendTime != 5_000_000 {
		t.Fatalf("LogAppendTime %d", info.LogAppendTime)
	}
	h, _ := ParseBatchHeader(b)
	if !h.LogAppendTime() || h.MaxTimestamp != 5_000_000 || h.FirstTimestamp != 10 {
		t.Fatalf("header %+v", h)
	}
	if err := ValidateBatches(b); err != nil {
		t.Fatalf("CRC not recomputed: %v", err)
	}
	if off, ts, err := l.OffsetForTime(4_999_999); err != nil || off != 0 || ts != 5_000_000 {
		t.Fatalf("OffsetForTime = %d, %d, %v", off, ts, err)
	}

	// Under CreateTime a producer's LogAppendTime bit is cleared.
	cfg.LogAppendTime = false
	l.SetConfig(cfg)
	b2 := makeBatchRaw(attrTimestampType, 20, 20, 1, encodeRecords([]testRecord{{value: []byte("v")}}))
	mustAppend(t, l, b2, -1)
	if h, _ := ParseBatchHeader(b2); h.LogAppendTime() || ValidateBatches(b2) != nil {
		t.Fatalf("CreateTime append kept LogAppendTime bit or broke CRC: %+v", h)
	}
}

func TestReadBounds(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig())
	defer l.Close()
	var sizes []int64
	for i := 0; i < 4; i++ {
		b := sizedBatch(int64(i), 2, 100) // offsets 2i, 2i+1
		sizes = append(sizes, int64(len(b)))
		mustAppend(t, l, b, -1)
	}
	end := l.EndOffset()
	check := func(offset int64, maxBytes int, upTo int64, wantBases ...int64) {
		t.Helper()
		s, err := l.Read(offset, maxBytes, upTo)
		if err != nil {
			t.Fatalf("Read(%d, %d, %d): %v", offset, maxBytes, upTo, err)
		}
		defer s.Release()
		hs := batchesIn(t, readAll(t, s))
		var bases []int64
		for _, h := range hs {
			bases = append(bases, h.BaseOffset)
		}
		if len(bases) != len(wantBases) || (len(bases) > 0 && !equalInts(bases, wantBases)) {
			t.Fatalf("Read(%d, %d, %d) gave batches %v, want %v", offset, maxBytes, upTo, bases, wantBases)
		}
	}
	check(0, 1<<20, end, 0, 2, 4, 6)
	check(3, 1<<20, end, 2, 4, 6)               // starts at the batch holding 3
	check(0, 1, end, 0)                         // first batch whole despite maxBytes
	check(0, int(sizes[0]+sizes[1]), end, 0, 2) // whole batches up to maxBytes
	check(0, int(sizes[0]+sizes[1])-1, end, 0)
	check(0, 1<<20, 4, 0, 2) // never past upTo
	check(0, 1<<20, 5, 0, 2) // batch 4-5 crosses upTo
	check(4, 1<<20, 4)       // at upTo: empty
	check(end, 1<<20, end)   // at the end: empty
	check(0, 1<<20, end+10, 0, 2, 4, 6)
	for _, off := range []int64{-1, end + 1} {
		if _, err := l.Read(off, 100, end); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("Read(%d): %v, want ErrOffsetOutOfRange", off, err)
		}
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRollBySizeAndAgeAndReadAcrossSegments(t *testing.T) {
	clock := &fakeClock{now: time.UnixMilli(1_000_000)}
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	cfg.SegmentAge = time.Hour
	cfg.Clock = clock.Now
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	defer l.Close()
	var all []byte
	for i := 0; i < 10; i++ {
		b := sizedBatch(clock.now.UnixMilli(), 3, 100) // ~400 bytes: two per segment
		mustAppend(t, l, b, -1)
		all = append(all, b...)
	}
	if n := l.SegmentCount(); n != 5 {
		t.Fatalf("%d segments, want 5", n)
	}
	for _, base := range []int64{0, 6, 12, 18, 24} {
		if _, err := os.Stat(segmentName(dir, base, logSuffix)); err != nil {
			t.Fatalf("segment %d: %v", base, err)
		}
	}
	s, err := l.Read(0, 1<<20, l.EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Regions) != 5 || !bytes.Equal(readAll(t, s), all) {
		t.Fatalf("read across segments: %d regions", len(s.Regions))
	}
	s.Release()

	// Age: the active segment's first batch is an hour old.
	clock.Advance(time.Hour)
	mustAppend(t, l, makeBatch(clock.now.UnixMilli(), []byte("late")), -1)
	if n := l.SegmentCount(); n != 6 {
		t.Fatalf("%d segments after age roll, want 6", n)
	}
}

func TestOffsetForTime(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 2000
	cfg.IndexIntervalBytes = 100
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	// Timestamps rise but not monotonically: batch i has max ts 100*i, except
	// batch 5 which is late (ts 50).
	for i := 0; i < 20; i++ {
		ts := int64(100 * i)
		if i == 5 {
			ts = 50
		}
		mustAppend(t, l, sizedBatch(ts, 1, 150), -1)
	}
	for _, c := range []struct{ ts, off, got int64 }{
		{-5, 0, 0}, {0, 0, 0}, {1, 1, 100}, {100, 1, 100}, {450, 6, 600}, {1900, 19, 1900}, {1901, 20, -1},
	} {
		off, ts, err := l.OffsetForTime(c.ts)
		if err != nil || off != c.off || ts != c.got {
			t.Fatalf("OffsetForTime(%d) = %d, %d, %v; want %d, %d", c.ts, off, ts, err, c.off, c.got)
		}
	}
}

func TestLeaderEpochCache(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, testConfig())
	mustAppend(t, l, makeBatch(1, []byte("a"), []byte("b")), 1) // 0-1
	mustAppend(t, l, makeBatch(1, []byte("c")), 1)              // 2
	mustAppend(t, l, makeBatch(1, []byte("d")), 4)              // 3
	mustAppend(t, l, makeBatch(1, []byte("e")), 7)              // 4
	want := []EpochEntry{{1, 0}, {4, 3}, {7, 4}}
	if got := l.LeaderEpochs(); !equalEpochs(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	if _, err := l.Append(makeBatch(1, []byte("f")), 5); !errors.Is(err, ErrStaleLeaderEpoch) {
		t.Fatalf("append with an older epoch: %v", err)
	}
	for _, c := range []struct {
		epoch int32
		end   int64
		ok    bool
	}{{0, -1, false}, {1, 3, true}, {2, 3, true}, {4, 4, true}, {7, 5, true}, {8, -1, false}} {
		end, ok := l.EndOffsetForEpoch(c.epoch)
		if end != c.end || ok != c.ok {
			t.Fatalf("EndOffsetForEpoch(%d) = %d, %v; want %d, %v", c.epoch, end, ok, c.end, c.ok)
		}
	}
	l.Close()
	l = openLog(t, dir, testConfig())
	if got := l.LeaderEpochs(); !equalEpochs(got, want) {
		t.Fatalf("epochs after reopen %v, want %v", got, want)
	}
	if err := l.TruncateTo(4); err != nil {
		t.Fatal(err)
	}
	if got := l.LeaderEpochs(); !equalEpochs(got, want[:2]) {
		t.Fatalf("epochs after truncation %v", got)
	}
	l.Close()
	l = openLog(t, dir, testConfig())
	defer l.Close()
	if got := l.LeaderEpochs(); !equalEpochs(got, want[:2]) {
		t.Fatalf("epochs after truncation and reopen %v", got)
	}
	if l.EndOffset() != 4 {
		t.Fatalf("end %d", l.EndOffset())
	}
}

func equalEpochs(a, b []EpochEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestTruncateTo(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	var batches [][]byte
	for i := 0; i < 10; i++ { // 3 records each; two batches per segment
		b := sizedBatch(int64(i), 3, 100)
		mustAppend(t, l, b, -1)
		batches = append(batches, b)
	}
	// Inside batch 7 (offsets 21-23): the whole batch goes.
	if err := l.TruncateTo(22); err != nil {
		t.Fatal(err)
	}
	if l.EndOffset() != 21 || l.SegmentCount() != 4 {
		t.Fatalf("end %d, %d segments", l.EndOffset(), l.SegmentCount())
	}
	// At a segment boundary: segment 18 goes whole.
	if err := l.TruncateTo(18); err != nil {
		t.Fatal(err)
	}
	if l.EndOffset() != 18 || l.SegmentCount() != 3 {
		t.Fatalf("end %d, %d segments", l.EndOffset(), l.SegmentCount())
	}
	if _, err := os.Stat(segmentName(dir, 18, logSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("segment 18 still on disk: %v", err)
	}
	info := mustAppend(t, l, sizedBatch(99, 1, 10), -1)
	if info.BaseOffset != 18 {
		t.Fatalf("append after truncation got offset %d", info.BaseOffset)
	}
	l.Close()
	l = openLog(t, dir, cfg)
	if l.EndOffset() != 19 {
		t.Fatalf("end after reopen %d", l.EndOffset())
	}
	s, err := l.Read(0, 1<<20, 19)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Join(batches[:6], nil)
	if got := readAll(t, s); !bytes.Equal(got[:len(want)], want) {
		t.Fatal("kept prefix changed")
	}
	s.Release()
	// Below the start: empty log restarting there.
	if err := l.TruncateTo(0); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 0 || l.EndOffset() != 0 || l.SegmentCount() != 1 {
		t.Fatalf("start %d end %d segs %d", l.StartOffset(), l.EndOffset(), l.SegmentCount())
	}
	l.Close()
}

func TestCloseAndDelete(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "topic-0")
	l := openLog(t, dir, testConfig())
	mustAppend(t, l, makeBatch(1, []byte("a")), -1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(makeBatch(1, []byte("a")), -1); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	if _, err := l.Read(0, 10, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
	l = openLog(t, dir, testConfig())
	if l.EndOffset() != 1 {
		t.Fatalf("end %d", l.EndOffset())
	}
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dir remains: %v", err)
	}
}

var _ = binary.BigEndian
