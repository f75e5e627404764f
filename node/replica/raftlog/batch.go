package raftlog

import (
	"hash/crc32"

	pb "go.etcd.io/raft/v3/raftpb"
)

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
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// isData says whether e is stored as a record batch, taking Kafka offsets;
// every other entry (a new leader's empty entry, a configuration change)
// goes to the sidecar.
func isData(e *pb.Entry) bool {
	return e.GetType() == pb.EntryNormal && len(e.GetData()) > 0
}
