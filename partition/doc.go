// Package partition owns one topic partition's log on disk: segment files
// holding Kafka RecordBatch v2 bytes exactly as producers sent them, a sparse
// offset index and a time index beside each, append with offset assignment,
// reads handed out as file regions for sendfile, retention, truncation, crash
// recovery and the leader-epoch cache. It knows nothing of the network.
//
// A partition directory holds:
//
//	%020d.log                  segments, named by their first offset
//	%020d.index                offset index: an entry every ~4 KiB of log
//	%020d.timeindex            time index, entries where the newest timestamp grew
//	recovery-point-checkpoint  up to where everything is known to be on disk
//	leader-epoch-checkpoint    leader epoch -> first offset, Kafka's format
//
// The invariants follow Apache Kafka's log layer: offsets are contiguous and
// ascend across segments; only the last (active) segment is written; an index
// is never trusted over its log; state files are replaced atomically; a reader
// never sees a byte that an append has not finished writing.
//
// Locking: one mutex serializes writers (append, roll, truncate, retention);
// a read-write mutex guards what readers see, and is held for writing only to
// publish a finished append or to change the segment list, never across an
// fsync of appended data. Files are opened through a FileCache shared by all
// logs of a node, which bounds open descriptors.
package partition
