package raftlog

import (
	"hash/crc32"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/spool-log/spool/internal/recordbatch"
)

// RecordBatch v2 header fields this package reads or writes, by the names
// it uses for them (the format is internal/recordbatch's).
const (
	batchHeaderSize = recordbatch.HeaderSize
	offLength       = recordbatch.OffLength
	offEpoch        = recordbatch.OffLeaderEpoch
	offMagic        = recordbatch.OffMagic
	offCRC          = recordbatch.OffCRC
	offAttributes   = recordbatch.OffAttributes
	offLastDelta    = recordbatch.OffLastOffsetDelta
	attrControl     = recordbatch.AttrControl
	attrTxn         = recordbatch.AttrTransactional
)

// oldRaftControl says whether a batch's attributes are those of a Raft
// entry stored the unreleased way (doc.go): a control batch that is not
// transactional. A transaction marker (commit or abort) is a control batch
// with the transactional bit too, as Kafka writes it, and is an ordinary
// entry here.
func oldRaftControl(attrs uint16) bool {
	return attrs&attrControl != 0 && attrs&attrTxn == 0
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// isData says whether e is stored as a record batch, taking Kafka offsets;
// every other entry (a new leader's empty entry, a configuration change, a
// command) goes to the sidecar.
func isData(e *pb.Entry) bool {
	return e.GetType() == pb.EntryNormal && len(e.GetData()) > 0 && !IsCommand(e)
}
