package partition

import (
	"encoding/binary"
	"fmt"

	"math"
	"os"
)

// The sparse indexes beside each segment, as in Kafka:
//
//	%020d.index      8-byte entries: offset - base (uint32), position (uint32)
//	%020d.timeindex 12-byte entries: timestamp ms (int64), offset - base (uint32)
//
// Offset index entries point at the first byte of a batch, ascending in both
// fields. A time index entry (t, o) says that t is the newest timestamp of any
// batch up to and including the batch at base offset o; timestamps ascend
// strictly. Both are appended with pwrite and read with pread, so an idle
// segment costs no memory. Both are rebuilt from the log whenever they fail a
// sanity check: the log is the truth.
const (
	offsetEntrySize = 8
	timeEntrySize   = 12
)

type offsetEntry struct {
	rel uint32 // offset - segment base
	pos uint32
}

type timeEntry struct {
	ts  int64
	rel uint32
}

func putOffsetEntry(b []byte, e offsetEntry) []byte {
	b = binary.BigEndian.AppendUint32(b, e.rel)
	return binary.BigEndian.AppendUint32(b, e.pos)
}

func putTimeEntry(b []byte, e timeEntry) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(e.ts))
	return binary.BigEndian.AppendUint32(b, e.rel)
}

func readOffsetEntry(f *os.File, i int) (offsetEntry, error) {
	var b [offsetEntrySize]byte
	if _, err := f.ReadAt(b[:], int64(i)*offsetEntrySize); err != nil {
		return offsetEntry{}, fmt.Errorf("read %s entry %d: %w", f.Name(), i, err)
	}
	return offsetEntry{rel: binary.BigEndian.Uint32(b[:]), pos: binary.BigEndian.Uint32(b[4:])}, nil
}

func readTimeEntry(f *os.File, i int) (timeEntry, error) {
	var b [timeEntrySize]byte
	if _, err := f.ReadAt(b[:], int64(i)*timeEntrySize); err != nil {
		return timeEntry{}, fmt.Errorf("read %s entry %d: %w", f.Name(), i, err)
	}
	return timeEntry{ts: int64(binary.BigEndian.Uint64(b[:])), rel: binary.BigEndian.Uint32(b[8:])}, nil
}

// floorOffsetEntry finds the last of the first n entries whose offset is <=
// rel, by binary search with one pread per probe. ok is false if none is.
// Reads at the log's tail usually hit the last entry, so it is tried first.
func floorOffsetEntry(f *os.File, n int, rel uint32) (e offsetEntry, ok bool, err error) {
	if n == 0 {
		return offsetEntry{}, false, nil
	}
	last, err := readOffsetEntry(f, n-1)
	if err != nil || last.rel <= rel {
		return last, err == nil, err
	}
	lo, hi := 0, n-1 // answer in [lo-1, hi): entries >= hi are > rel
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		m, err := readOffsetEntry(f, mid)
		if err != nil {
			return offsetEntry{}, false, err
		}
		if m.rel <= rel {
			e, ok = m, true
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return e, ok, nil
}

// floorTimeEntry finds the last of the first n entries whose timestamp is
// strictly below ts: no batch before its offset can have a timestamp >= ts.
func floorTimeEntry(f *os.File, n int, ts int64) (e timeEntry, ok bool, err error) {
	lo, hi := 0, n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		m, err := readTimeEntry(f, mid)
		if err != nil {
			return timeEntry{}, false, err
		}
		if m.ts < ts {
			e, ok = m, true
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return e, ok, nil
}

// indexSummary is what a sane pair of index files says about their segment.
type indexSummary struct {
	offsetEntries int
	timeEntries   int
	lastOffset    offsetEntry // valid if offsetEntries > 0
	lastTime      timeEntry   // valid if timeEntries > 0
}

// checkIndexes reads both index files whole and reports whether they are
// consistent with a log of logSize bytes whose offsets stay below maxRel
// (exclusive, math.MaxUint32+1 if unknown). Any doubt means rebuild.
func checkIndexes(offsetPath, timePath string, logSize int64, maxRel int64) (indexSummary, error) {
	var s indexSummary
	ob, err := os.ReadFile(offsetPath)
	if err != nil {
		return s, err
	}
	tb, err := os.ReadFile(timePath)
	if err != nil {
		return s, err
	}
	if len(ob)%offsetEntrySize != 0 || len(tb)%timeEntrySize != 0 {
		return s, fmt.Errorf("index size not a whole number of entries")
	}
	s.offsetEntries = len(ob) / offsetEntrySize
	s.timeEntries = len(tb) / timeEntrySize
	var prev offsetEntry
	for i := 0; i < s.offsetEntries; i++ {
		e := offsetEntry{rel: binary.BigEndian.Uint32(ob[i*8:]), pos: binary.BigEndian.Uint32(ob[i*8+4:])}
		if int64(e.pos) >= logSize || int64(e.rel) >= maxRel || (i > 0 && (e.rel <= prev.rel || e.pos <= prev.pos)) || (i == 0 && e.pos == 0) {
			return s, fmt.Errorf("offset index entry %d (%d, %d) out of order or bounds", i, e.rel, e.pos)
		}
		prev = e
	}
	s.lastOffset = prev
	var prevT timeEntry
	for i := 0; i < s.timeEntries; i++ {
		e := timeEntry{ts: int64(binary.BigEndian.Uint64(tb[i*12:])), rel: binary.BigEndian.Uint32(tb[i*12+8:])}
		if int64(e.rel) >= maxRel || (i > 0 && (e.ts <= prevT.ts || e.rel < prevT.rel)) {
			return s, fmt.Errorf("time index entry %d (%d, %d) out of order or bounds", i, e.ts, e.rel)
		}
		prevT = e
	}
	s.lastTime = prevT
	return s, nil
}

// relOK reports whether offset o can be stored relative to base.
func relOK(base, o int64) bool { return o >= base && o-base <= math.MaxUint32 }
