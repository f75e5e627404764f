// Package raftlog is the Raft log of one partition's replica: it implements
// raft.Storage of go.etcd.io/raft/v3 on the partition's own segment log
// (partition.Log), so record bytes are written once, and the Raft state
// beside it (hard state, snapshot metadata). It owns the mapping between the
// two numberings, Raft index and Kafka offset; it knows nothing of the
// network or of who leads.
//
// # Entries are batches
//
// One Raft entry is one RecordBatch v2. A normal entry's Data is the batch's
// bytes; Append writes them with partition.(*Log).AppendAt at the log end,
// stamping the two fields the CRC does not cover: the base offset (the log
// end, which log matching makes the same on every replica, since offsets are
// a function of the entries before) and the partition leader epoch (= the
// entry's Raft term). A leader that stamps the same values before proposing,
// to answer a producer with its offset, gets the same bytes; a replica never
// changes anything else, so every replica holds identical bytes at identical
// offsets. Entries reads the bytes back from the segments.
//
// Raft's own entries (the empty entry a new leader appends, configuration
// changes) are stored too, as control batches: attribute bit 5 set, no
// producer id, one record (one offset) whose key is Kafka's control key
// (version 0, type ControlType) and whose value is the entry type and data.
// ControlType is 0x5350 ("SP"), outside the types Kafka assigns (0 abort,
// 1 commit, 2-6 KRaft's leader change, snapshot header/footer, kraft version,
// voters), so no Kafka parser mistakes it for one of its own. Consumers
// never hand a control record to the application; they interpret only
// abort/commit markers and step over other types, and the position moves
// past the offset as past a transaction marker. Read in the clients'
// source: franz-go drops control records unless KeepControlRecords; sarama
// decodes the 4-byte key, maps an unknown type to ControlRecordUnknown
// without reading the value, as Java's ControlRecordType.UNKNOWN ("should be
// ignored"), and skips the batch. That kafka-go, librdkafka and kafkajs read
// across them too is for the integration tests of the wiring to prove.
//
// # Index map
//
// The entries from FirstIndex to LastIndex are the batches of the log from
// the snapshot's offset to the log end, in order, one each. Open rebuilds
// the map by walking batch headers (nothing to keep in sync on disk): per
// run of up to 64Ki entries a first index, a base offset and a uint32 offset
// delta per entry (4 bytes an entry), and the terms as a list of (first
// index, term) changes, like Kafka's leader-epoch cache. File positions are
// left to the partition's sparse index, which already finds any offset.
//
// # State files, in the partition directory
//
//	raft-hardstate   term, vote, commit: rewritten atomically (fsync) when
//	                 term or vote change; commit only rides along, and on
//	                 Close, as raft relearns it from the leader (a restart
//	                 may start from an older commit, never a newer one).
//	raft-snapshot    the snapshot metadata: index, term and conf state of
//	                 the last entry before the log, and the offset where the
//	                 log's first entry starts.
//
// # Snapshots are "the log start moved"
//
// Compact(i) records entry i as the snapshot (durably, first), then moves
// the partition's log start past it (DeleteRecordsBefore) and lets
// retention delete the segments below. Snapshot returns that metadata; its
// Data is only the 8-byte offset where the next entry starts, because the
// follower must number records from there and raft's snapshot is the one
// message that reaches it with index and term. ApplySnapshot on a follower
// records the snapshot and restarts its log, empty, at that offset
// (partition.(*Log).RestartAt); raft then sends the entries after it. The
// bytes below the log start are not part of the state: the records there
// are deleted on the leader too. Copying the leader's segments (so a new
// replica also serves the records between log start and the snapshot) is a
// later step. The partition's own retention by age or size must not run on
// a Raft log: it would move the log start without this package, which then
// cannot number the entries (Open says so); the replica turns retention
// into Compact calls below the commit point.
//
// # Truncation
//
// Appending entries whose first index is at or below LastIndex cuts the log
// (partition TruncateTo at the base offset of the first of them, which also
// cuts the leader-epoch cache) and the map, then appends: Raft's log matching
// decides what diverged.
//
// Storage is safe for concurrent use; raft calls it from the goroutine that
// drives the RawNode, and readers of offsets (the high watermark) from others.
package raftlog
