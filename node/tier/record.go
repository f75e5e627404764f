package tier

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/spool-log/spool/partition"
)

// A record is what the leader makes part of the partition's replicated
// state (replica.RecordRemote): the payload of a Raft command entry, so
// every replica applies the same records in the same order.
//
//	version  u8 (2; 1 is read: an upload without its leader epochs)
//	kind     u8: 'U' an upload, 'S' the remote log start moved (remote retention)
//	'U': base, next, size, maxTimestamp i64; epoch i32 (the uploader's
//	     leader epoch); id [16]byte (the object directory); the size of
//	     each of the numFiles files, i64, in FileKinds order (0: absent);
//	     v2: count u16, count × (epoch i32, start i64): the leader epochs
//	     of the segment's records (RemoteSegment.Epochs)
//	'S': offset i64
const (
	recordVersion = 2
	kindUpload    = 'U'
	kindStart     = 'S'
)

// maxSegmentEpochs bounds the leader epochs an upload record carries. A
// segment whose records span more keeps its first and its last ones
// (SegmentEpochs): OffsetForLeaderEpoch then answers a dropped epoch with
// the older kept one and the next kept start, an end at or above the true
// one, which never makes a consumer reset.
const maxSegmentEpochs = 1024

// FileKinds are the objects of an uploaded segment, in record order, named
// as in the store (layout.go).
var FileKinds = [...]string{"log", "index", "timeindex", "leader-epoch-checkpoint", "producer-snapshot", "txnindex"}

const (
	fileLog = iota
	fileIndex
	fileTimeIndex
	fileEpochs
	fileProducers
	fileTxnIndex
	numFiles = len(FileKinds)
)

// uploadRecordSize is an upload record's encoded length before its
// epochs (all of a version 1 record).
const uploadRecordSize = 2 + 4*8 + 4 + 16 + numFiles*8

// epochEntrySize is one leader epoch's length in an upload record.
const epochEntrySize = 4 + 8

// SegmentID names one upload's object directory.
type SegmentID [16]byte

func (id SegmentID) String() string { return hex.EncodeToString(id[:]) }

// RemoteSegment is one uploaded segment: the offsets [Base, Next) it holds.
type RemoteSegment struct {
	Base, Next   int64
	Size         int64 // bytes of the log object
	MaxTimestamp int64
	Epoch        int32
	ID           SegmentID
	FileSizes    [numFiles]int64
	// Epochs are the leader epochs of the segment's records, ascending:
	// the first in effect at Base, each later one from the offset its
	// leader wrote first (SegmentEpochs). OffsetForLeaderEpoch answers
	// from them below the local log start. Nil for a segment recorded by
	// a version 1 record, which did not carry them.
	Epochs []partition.EpochEntry
}

// Equal says whether s and o are the same record of the same upload.
func (s RemoteSegment) Equal(o RemoteSegment) bool {
	return s.Base == o.Base && s.Next == o.Next && s.Size == o.Size && s.MaxTimestamp == o.MaxTimestamp &&
		s.Epoch == o.Epoch && s.ID == o.ID && s.FileSizes == o.FileSizes && slices.Equal(s.Epochs, o.Epochs)
}

// SegmentEpochs is the part of a replica's leader-epoch cache (oldest
// first) that covers the records in [base, next): the entry in effect at
// base, its start raised to base, and every later one starting below
// next; the middle ones dropped past maxSegmentEpochs.
func SegmentEpochs(cache []partition.EpochEntry, base, next int64) []partition.EpochEntry {
	var out []partition.EpochEntry
	for i, e := range cache {
		if e.StartOffset >= next {
			break
		}
		if i+1 < len(cache) && cache[i+1].StartOffset <= base {
			continue // wholly below base
		}
		e.StartOffset = max(e.StartOffset, base)
		out = append(out, e)
	}
	if len(out) > maxSegmentEpochs {
		out = append(out[:1], out[len(out)-maxSegmentEpochs+1:]...)
	}
	return out
}

// Record is a decoded remote-storage record: an upload, or a new remote
// log start (Upload nil).
type Record struct {
	Upload *RemoteSegment
	Start  int64
}

// EncodeUpload is the record of an upload (its Epochs past
// maxSegmentEpochs are not encoded: SegmentEpochs bounds them).
func EncodeUpload(s RemoteSegment) []byte {
	epochs := s.Epochs[:min(len(s.Epochs), maxSegmentEpochs)]
	b := make([]byte, 0, uploadRecordSize+2+len(epochs)*epochEntrySize)
	b = append(b, recordVersion, kindUpload)
	b = binary.BigEndian.AppendUint64(b, uint64(s.Base))
	b = binary.BigEndian.AppendUint64(b, uint64(s.Next))
	b = binary.BigEndian.AppendUint64(b, uint64(s.Size))
	b = binary.BigEndian.AppendUint64(b, uint64(s.MaxTimestamp))
	b = binary.BigEndian.AppendUint32(b, uint32(s.Epoch))
	b = append(b, s.ID[:]...)
	for _, n := range s.FileSizes {
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(epochs)))
	for _, e := range epochs {
		b = binary.BigEndian.AppendUint32(b, uint32(e.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.StartOffset))
	}
	return b
}

// EncodeStart is the record that moves the remote log start to offset.
func EncodeStart(offset int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{recordVersion, kindStart}, uint64(offset))
}

var errBadRecord = errors.New("bad remote-storage record")

// DecodeRecord decodes a record; anything malformed is an error, never a
// panic (the bytes come from the Raft log, written by another node).
func DecodeRecord(b []byte) (Record, error) {
	if len(b) < 2 || (b[0] != 1 && b[0] != recordVersion) {
		return Record{}, fmt.Errorf("%w: version", errBadRecord)
	}
	switch b[1] {
	case kindStart:
		if len(b) != 10 {
			return Record{}, fmt.Errorf("%w: start record of %d bytes", errBadRecord, len(b))
		}
		off := int64(binary.BigEndian.Uint64(b[2:]))
		if off < 0 {
			return Record{}, fmt.Errorf("%w: negative start %d", errBadRecord, off)
		}
		return Record{Start: off}, nil
	case kindUpload:
		s, n, err := decodeUpload(b)
		if err != nil {
			return Record{}, err
		}
		if n != len(b) {
			return Record{}, fmt.Errorf("%w: upload record of %d bytes, %d after it", errBadRecord, n, len(b)-n)
		}
		return Record{Upload: &s}, nil
	}
	return Record{}, fmt.Errorf("%w: kind %q", errBadRecord, b[1])
}

// decodeUpload decodes the upload record at the start of b and says how
// many bytes it took.
func decodeUpload(b []byte) (RemoteSegment, int, error) {
	if len(b) < uploadRecordSize || (b[0] != 1 && b[0] != recordVersion) || b[1] != kindUpload {
		return RemoteSegment{}, 0, fmt.Errorf("%w: upload record of %d bytes", errBadRecord, len(b))
	}
	u64 := func(i int) int64 { return int64(binary.BigEndian.Uint64(b[i:])) }
	s := RemoteSegment{Base: u64(2), Next: u64(10), Size: u64(18), MaxTimestamp: u64(26), Epoch: int32(binary.BigEndian.Uint32(b[34:]))}
	copy(s.ID[:], b[38:54])
	for i := range s.FileSizes {
		s.FileSizes[i] = u64(54 + 8*i)
		if s.FileSizes[i] < 0 {
			return RemoteSegment{}, 0, fmt.Errorf("%w: negative file size", errBadRecord)
		}
	}
	if s.Base < 0 || s.Next <= s.Base || s.Size <= 0 || s.FileSizes[fileLog] != s.Size {
		return RemoteSegment{}, 0, fmt.Errorf("%w: range [%d,%d) size %d", errBadRecord, s.Base, s.Next, s.Size)
	}
	n := uploadRecordSize
	if b[0] == 1 {
		return s, n, nil
	}
	if len(b) < n+2 {
		return RemoteSegment{}, 0, fmt.Errorf("%w: upload record of %d bytes, no epoch count", errBadRecord, len(b))
	}
	count := int(binary.BigEndian.Uint16(b[n:]))
	n += 2
	if count > maxSegmentEpochs || len(b) < n+count*epochEntrySize {
		return RemoteSegment{}, 0, fmt.Errorf("%w: %d epochs in %d bytes", errBadRecord, count, len(b)-n)
	}
	if count > 0 {
		s.Epochs = make([]partition.EpochEntry, count)
	}
	for i := range s.Epochs {
		e := partition.EpochEntry{Epoch: int32(binary.BigEndian.Uint32(b[n:])), StartOffset: int64(binary.BigEndian.Uint64(b[n+4:]))}
		n += epochEntrySize
		if e.Epoch < 0 || e.StartOffset < s.Base || e.StartOffset >= s.Next ||
			(i > 0 && (e.Epoch <= s.Epochs[i-1].Epoch || e.StartOffset < s.Epochs[i-1].StartOffset)) {
			return RemoteSegment{}, 0, fmt.Errorf("%w: epoch %d at %d in segment [%d,%d)", errBadRecord, e.Epoch, e.StartOffset, s.Base, s.Next)
		}
		s.Epochs[i] = e
	}
	return s, n, nil
}
