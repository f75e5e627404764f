package raftlog

import (
	"encoding/binary"

	pb "go.etcd.io/raft/v3/raftpb"
)

// Commands are entries the replicas apply to their logs rather than store
// as records: kept in the sidecar, like Raft's own entries, taking no
// offset. Their data starts with 0xFF, which no record batch's does here:
// a batch starts with its base offset, never negative, and the leader
// zeroes it before proposing (the log stamps it on append).
const (
	commandMark         = 0xFF
	cmdDeleteRecords    = 'D'
	deleteRecordsLength = 2 + 8
	cmdRemote           = 'R'
	// MaxRemotePayload bounds a remote-storage command's payload.
	MaxRemotePayload = 4 << 10
)

// RemoteCommand is the entry data of a tiered-storage record (node/tier:
// an upload, a remote log start moved), applied by every replica at its
// place in the log. The payload is opaque here, at most MaxRemotePayload.
func RemoteCommand(payload []byte) []byte {
	return append([]byte{commandMark, cmdRemote}, payload...)
}

// RemotePayload is the payload of a remote-storage command.
func RemotePayload(e *pb.Entry) ([]byte, bool) {
	d := e.GetData()
	if !IsCommand(e) || len(d) < 2 || d[1] != cmdRemote || len(d)-2 > MaxRemotePayload {
		return nil, false
	}
	return d[2:], true
}

// DeleteRecordsCommand is the entry data that moves every replica's log
// start to offset (DeleteRecords), at its place in the log.
func DeleteRecordsCommand(offset int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{commandMark, cmdDeleteRecords}, uint64(offset))
}

// IsCommand says whether e is a command entry.
func IsCommand(e *pb.Entry) bool {
	return e.GetType() == pb.EntryNormal && len(e.GetData()) > 0 && e.GetData()[0] == commandMark
}

// DeleteRecordsOffset is the offset a DeleteRecords command names.
func DeleteRecordsOffset(e *pb.Entry) (int64, bool) {
	d := e.GetData()
	if !IsCommand(e) || len(d) != deleteRecordsLength || d[1] != cmdDeleteRecords {
		return 0, false
	}
	off := int64(binary.BigEndian.Uint64(d[2:]))
	return off, off >= 0
}
