// Package raftlog is the Raft log of one partition's replica: it implements
// raft.Storage of go.etcd.io/raft/v3 on the partition's own segment log
// (partition.Log), so record bytes are written once, and the Raft state
// beside it (hard state, snapshot metadata). It owns the mapping between the
// two numberings, Raft index and Kafka offset; it knows nothing of the
// network or of who leads.
//
// # Entries are batches
//
// One Raft entry holding records is one RecordBatch v2. Its Data is the
// batch's bytes; Append writes them with partition.(*Log).AppendAt at the log end,
// stamping the two fields the CRC does not cover: the base offset (the log
// end, which log matching makes the same on every replica, since offsets are
// a function of the entries before) and the partition leader epoch (= the
// entry's Raft term). A leader that stamps the same values before proposing,
// to answer a producer with its offset, gets the same bytes; a replica never
// changes anything else, so every replica holds identical bytes at identical
// offsets. Entries reads the bytes back from the segments.
//
// # Raft's own entries take no offset
//
// Raft also commits entries that hold no records: the empty entry every new
// leader appends, and configuration changes. They are kept out of the Kafka
// offset space, as Redpanda's offset translator does, in a sidecar file
// beside the segments: raft-entries, one record per entry (raft index,
// term, type, data, and the Kafka offset of the batch it sits before, or
// of the log end when nothing follows yet). So every replica's offsets are
// those of the records alone, and consumers see nothing but records.
//
// Why not Kafka's precedent, a control batch (attribute bit 5, one offset,
// skipped by clients as they skip transaction markers), which is what this
// package first wrote (type 0x5350): segmentio/kafka-go (v0.4.51) never
// reads a batch's control bit, so after every leader change its
// applications were handed a junk record (key 00005350, value 0000); nor
// can the batch be empty, as kafka-go misparses a batch of no records. The
// format changed without a migration, since no release wrote control
// batches: Open refuses a log that holds a control batch without the
// transactional bit (what that format wrote) rather than misnumber it.
// Transaction markers (node/txn: commit or abort, written by the
// transaction coordinator through the partition's replica like any batch)
// are control batches with the transactional bit, as Kafka writes them,
// and are ordinary entries taking one offset; Produce still refuses any
// control batch from a client.
//
// Crash safety rests on one order: a sidecar record is appended and
// fsynced (they are rare: one per election) before any batch after it is
// written, and the batches before it need not be on disk yet. So a crash
// can lose batches before a synced sidecar entry, never the sidecar entry
// before a surviving batch; Open, walking the batches, places each sidecar
// entry before the batch at its offset, and drops (durably) those whose
// offset is past the recovered log end: their batches are gone, so they
// are a lost suffix, as unsynced batches are. A record torn by a crash
// inside its append is cut off; a damaged one before the last fails Open.
// A cut truncates the log first, then the sidecar, for the same reason.
//
// # Index map
//
// The entries from FirstIndex to LastIndex are the batches of the log from
// the snapshot's offset to the log end, in order, one each, with the
// sidecar's entries between them. Open rebuilds the map by walking batch
// headers and the sidecar (nothing else to keep in sync on disk): per run
// of up to 64Ki entries a first index, a base offset and a uint32 offset
// delta per entry (4 bytes an entry; a sidecar entry's is the offset it
// sits before), and the terms as a list of (first index, term) changes,
// like Kafka's leader-epoch cache. So NextOffset(i), the offset after the
// last batch at or below entry i (the high watermark, for the commit
// index), is the offset of entry i+1. File positions are left to the
// partition's sparse index, which already finds any offset. The sidecar's
// entries stay in memory too (a few per election).
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
//	raft-entries     the sidecar: Raft's own entries after the snapshot,
//	                 appended and fsynced one by one; cut with the log,
//	                 rewritten atomically when a snapshot drops entries.
//	raft-snapshot-copy-<index>  a follower's copy of a snapshot's records,
//	                 one per snapshot index (at most 4), staged before the
//	                 snapshot is applied; applying one removes it and the
//	                 older ones.
//
// # Snapshots: the log start moved, or records sealed below the Raft log
//
// Compact(i) records entry i as the snapshot (durably, first), then moves
// the partition's log start past it (DeleteRecordsBefore) and lets
// retention delete the segments below: retention. Seal(i) records the
// snapshot the same way but keeps the records: the batches up to i stop
// being Raft entries (and their index leaves memory) and become the
// snapshot's records, which the log cleaner may then rewrite, as each
// Kafka replica compacts its own log. Snapshot returns the metadata; its
// Data is the offset where the next entry starts and, when records lie
// below it, the log start too (8 or 16 bytes), because the follower must
// number records from there and raft's snapshot is the one message that
// reaches it with index and term.
//
// A snapshot without records is applied by restarting the follower's log,
// empty, at that offset (partition.(*Log).RestartAt), the sidecar emptied;
// raft then sends the entries after it. A snapshot with records is
// applied only once they are here (copy.go): the follower reads the
// sender's WriteSnapshot stream into raft-snapshot-copy-<index> (StageSnapshot,
// every batch's CRC and place checked, fsynced) before the snapshot is
// stepped; ApplySnapshot then restarts the log at the snapshot's log start
// and appends the staged batches as the leader holds them, offsets, gaps
// and epochs included (partition.(*Log).AppendCopied). A crash in between
// is finished by Open from the staged copy, which goes only after the
// snapshot is recorded as applied. Compact drops the sidecar's entries up
// to i after recording the snapshot; Open skips (and drops) any a crash
// left below it. The partition's own retention by age or size must not
// run on a Raft log: it would move the log start without this package,
// which then cannot number the entries (Open says so); the replica turns
// retention into Compact calls below the commit point.
//
// # Commands
//
// An entry whose data starts 0xFF is a command (command.go), kept in the
// sidecar like Raft's own entries: DeleteRecords, which DeleteBefore
// applies on every replica: the entries ending at or below the offset
// become the snapshot, their records go, and an offset inside the next
// entry's batch becomes the log start while the batch stays whole for
// raft (reads of entries start below it: ReadBelowStart). The snapshot
// records that start as its floor, and sends it as the log start above
// the snapshot's offset; a follower given it takes it once its log holds
// the batch.
//
// # Truncation
//
// Appending entries whose first index is at or below LastIndex cuts the log
// (partition TruncateTo at the offset of the first of them, which also
// cuts the leader-epoch cache), then the sidecar and the map, then appends:
// Raft's log matching decides what diverged. A crash between the two cuts
// leaves sidecar entries past the log end, which Open drops, or at it, a
// prefix of the log before the cut.
//
// Storage is safe for concurrent use; raft calls it from the goroutine that
// drives the RawNode, and readers of offsets (the high watermark) from others.
package raftlog
