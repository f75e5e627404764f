package tier

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
)

// A record is what the leader makes part of the partition's replicated
// state (replica.RecordRemote): the payload of a Raft command entry, so
// every replica applies the same records in the same order.
//
//	version  u8 (1)
//	kind     u8: 'U' an upload, 'S' the remote log start moved (remote retention)
//	'U': base, next, size, maxTimestamp i64; epoch i32 (the uploader's
//	     leader epoch); id [16]byte (the object directory); the size of
//	     each of the numFiles files, i64, in FileKinds order (0: absent)
//	'S': offset i64
const (
	recordVersion = 1
	kindUpload    = 'U'
	kindStart     = 'S'
)

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

// uploadRecordSize is an upload record's encoded length.
const uploadRecordSize = 2 + 4*8 + 4 + 16 + numFiles*8

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
}

// Record is a decoded remote-storage record: an upload, or a new remote
// log start (Upload nil).
type Record struct {
	Upload *RemoteSegment
	Start  int64
}

// EncodeUpload is the record of an upload.
func EncodeUpload(s RemoteSegment) []byte {
	b := make([]byte, 0, uploadRecordSize)
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
	if len(b) < 2 || b[0] != recordVersion {
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
		s, err := decodeUpload(b)
		if err != nil {
			return Record{}, err
		}
		return Record{Upload: &s}, nil
	}
	return Record{}, fmt.Errorf("%w: kind %q", errBadRecord, b[1])
}

func decodeUpload(b []byte) (RemoteSegment, error) {
	if len(b) != uploadRecordSize || b[0] != recordVersion || b[1] != kindUpload {
		return RemoteSegment{}, fmt.Errorf("%w: upload record of %d bytes", errBadRecord, len(b))
	}
	u64 := func(i int) int64 { return int64(binary.BigEndian.Uint64(b[i:])) }
	s := RemoteSegment{Base: u64(2), Next: u64(10), Size: u64(18), MaxTimestamp: u64(26), Epoch: int32(binary.BigEndian.Uint32(b[34:]))}
	copy(s.ID[:], b[38:54])
	for i := range s.FileSizes {
		s.FileSizes[i] = u64(54 + 8*i)
		if s.FileSizes[i] < 0 {
			return RemoteSegment{}, fmt.Errorf("%w: negative file size", errBadRecord)
		}
	}
	if s.Base < 0 || s.Next <= s.Base || s.Size <= 0 || s.FileSizes[fileLog] != s.Size {
		return RemoteSegment{}, fmt.Errorf("%w: range [%d,%d) size %d", errBadRecord, s.Base, s.Next, s.Size)
	}
	return s, nil
}
