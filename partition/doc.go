// Package partition owns one topic partition's log on disk: segment files
// holding Kafka RecordBatch v2 bytes exactly as producers sent them, a sparse
// offset index and a time index beside each, append with offset assignment,
// reads handed out as file regions for sendfile, retention, log compaction
// (compact.go), truncation, crash recovery and the leader-epoch cache. It
// knows nothing of the network.
//
// A partition directory holds:
//
//	%020d.log                  segments, named by their first offset
//	%020d.index                offset index: an entry every ~4 KiB of log
//	%020d.timeindex            time index, entries where the newest timestamp grew
//	recovery-point-checkpoint  up to where everything is known to be on disk
//	leader-epoch-checkpoint    leader epoch -> first offset, Kafka's format
//	cleaner-offset-checkpoint  first dirty offset and earliest tombstone delete horizon
//
// and, only while a cleaning swaps a segment in, %020d.log.cleaned and
// %020d.log.%020d.swap files (with their indexes), which Open finishes or
// removes.
//
// The invariants follow Apache Kafka's log layer: offsets ascend across
// segments, contiguous except for the gaps compaction leaves below the
// cleaner checkpoint (or anywhere in a compacted log); only the last
// (active) segment is appended to, and only closed ones are cleaned; an
// index is never trusted over its log; state files are replaced atomically;
// a reader never sees a byte that an append has not finished writing.
// Recovery cuts a log at its first bad byte and, offsets being contiguous,
// takes every later segment out too; what it cuts or takes out goes to the
// quarantine directory first (quarantine.go), reported, never deleted.
// Sealed segments are checked again by Scrub (scrub.go); Read serves every
// whole batch before damage and refuses a read starting at it (ErrCorrupt).
//
// Locking: one mutex serializes writers (append, roll, truncate, retention,
// the swap of a cleaned segment; a cleaning reads and writes its new files
// outside it);
// a read-write mutex guards what readers see, and is held for writing only to
// publish a finished append or to change the segment list, never across an
// fsync of appended data. Files are opened through a FileCache shared by all
// logs of a node, which bounds open descriptors.
package partition
