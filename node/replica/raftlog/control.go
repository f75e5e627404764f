package raftlog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	pb "go.etcd.io/raft/v3/raftpb"
)

// ControlType is the control record type of the batches that hold Raft's own
// entries (see the package doc for why Kafka clients skip them).
const ControlType = 0x5350

// controlVersion is the version byte that opens a control record's value.
const controlVersion = 0

// RecordBatch v2 header fields this package reads or writes.
const (
	batchHeaderSize = 61
	offLength       = 8
	offEpoch        = 12
	offMagic        = 16
	offCRC          = 17
	offAttributes   = 21
	offLastDelta    = 23
	attrControl     = 0x20
	attrCodecMask   = 0x07
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendControlBatch appends to dst a control batch holding a Raft entry that
// is not a record batch: its type and data. The base offset and epoch are
// left zero for partition.AppendAt to stamp; the timestamps are -1 (Kafka's
// "none"), since every replica must write the same bytes and there is no
// clock they agree on.
func appendControlBatch(dst []byte, typ pb.EntryType, data []byte) []byte {
	var rec []byte
	rec = append(rec, 0)                                  // attributes
	rec = binary.AppendVarint(rec, 0)                     // timestamp delta
	rec = binary.AppendVarint(rec, 0)                     // offset delta
	rec = binary.AppendVarint(rec, 4)                     // key length
	rec = binary.BigEndian.AppendUint16(rec, 0)           // control key version
	rec = binary.BigEndian.AppendUint16(rec, ControlType) // control key type
	rec = binary.AppendVarint(rec, int64(2+len(data)))
	rec = append(rec, controlVersion, byte(typ))
	rec = append(rec, data...)
	rec = binary.AppendVarint(rec, 0) // headers

	start := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, 0) // base offset: stamped on append
	dst = binary.BigEndian.AppendUint32(dst, 0) // length, below
	dst = binary.BigEndian.AppendUint32(dst, 0) // partition leader epoch: stamped
	dst = append(dst, 2)                        // magic
	dst = binary.BigEndian.AppendUint32(dst, 0) // crc, below
	dst = binary.BigEndian.AppendUint16(dst, attrControl)
	dst = binary.BigEndian.AppendUint32(dst, 0)          // last offset delta
	dst = binary.BigEndian.AppendUint64(dst, ^uint64(0)) // first timestamp -1
	dst = binary.BigEndian.AppendUint64(dst, ^uint64(0)) // max timestamp -1
	dst = binary.BigEndian.AppendUint64(dst, ^uint64(0)) // producer id -1
	dst = binary.BigEndian.AppendUint16(dst, ^uint16(0)) // producer epoch -1
	dst = binary.BigEndian.AppendUint32(dst, ^uint32(0)) // base sequence -1
	dst = binary.BigEndian.AppendUint32(dst, 1)          // records
	dst = binary.AppendVarint(dst, int64(len(rec)))
	dst = append(dst, rec...)
	b := dst[start:]
	binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-offEpoch))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return dst
}

// entryOf turns a stored batch back into the entry it holds: a control batch
// of ControlType gives back the entry type and data it was made from; any
// other batch is a normal entry whose data is the batch.
func entryOf(batch []byte) (pb.EntryType, []byte, error) {
	if len(batch) < batchHeaderSize {
		return 0, nil, fmt.Errorf("batch of %d bytes is shorter than its header", len(batch))
	}
	attrs := binary.BigEndian.Uint16(batch[offAttributes:])
	if attrs&attrControl == 0 || attrs&attrCodecMask != 0 {
		return pb.EntryNormal, batch, nil
	}
	r := batch[batchHeaderSize:]
	var pos int
	next := func() int64 {
		if pos < 0 {
			return -1
		}
		v, n := binary.Varint(r[pos:])
		if n <= 0 {
			pos = -1
			return -1
		}
		pos += n
		return v
	}
	next() // record length
	if pos < 0 || pos >= len(r) {
		return 0, nil, fmt.Errorf("control batch: bad record")
	}
	pos++  // attributes
	next() // timestamp delta
	next() // offset delta
	keyLen := next()
	if pos < 0 || keyLen != 4 || pos+4 > len(r) {
		return pb.EntryNormal, batch, nil // not ours: a control batch of Kafka's
	}
	if binary.BigEndian.Uint16(r[pos+2:]) != ControlType {
		return pb.EntryNormal, batch, nil
	}
	pos += 4
	valLen := next()
	if pos < 0 || valLen < 2 || int64(len(r)-pos) < valLen {
		return 0, nil, fmt.Errorf("control batch: bad value length %d", valLen)
	}
	v := r[pos : pos+int(valLen)]
	if v[0] != controlVersion {
		return 0, nil, fmt.Errorf("control batch: value version %d", v[0])
	}
	typ := pb.EntryType(v[1])
	if _, ok := pb.EntryType_name[int32(typ)]; !ok {
		return 0, nil, fmt.Errorf("control batch: entry type %d", v[1])
	}
	var data []byte
	if len(v) > 2 {
		data = v[2:]
	}
	return typ, data, nil
}
