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
// Locking. A Log has four mutexes, always taken in this order, never the
// reverse, and the FileCache's after them:
//
//	cleanMu -> flushMu -> appendMu -> mu -> FileCache.mu
//
// What each serializes or guards:
//
//   - cleanMu serializes cleanings; a cleaning reads and writes its new files
//     holding only it, and takes appendMu to swap a cleaned segment in.
//   - flushMu serializes Flush, TruncateTo and Close, so a recovery point is
//     never written for bytes a truncation has since replaced.
//   - appendMu serializes writers: append, roll, truncation, retention,
//     DeleteRecords, the swap of a cleaned segment. A writer holds it across
//     its own file writes, so appends wait for a truncation; readers never
//     take it. Flush lets go of it for its fsyncs.
//   - mu, a read-write mutex, guards what readers see: the segment list,
//     each segment's published state (segment.st, its pending and in-memory
//     index entries, its scrub findings), epochs, cfg, closed, the log
//     start and the cleaner checkpoint. It is held over memory only: no file
//     is read, written, synced or closed under it. Read and OffsetForTime
//     take a snapshot under it (the segments from the one they start in and
//     their published sizes) and read headers and index files after letting
//     go: bytes below a published size do not change, as appends write past
//     it. Writers take it for writing only to publish a finished change.
//   - FileCache.mu is shared by every log of a node and is held over its
//     bookkeeping and the open of a file not open yet, never a read or a
//     close.
//
// Truncation is the one writer that changes bytes below a published size.
// It works out the new segment list reading headers under appendMu alone,
// publishes it under mu, then waits for every Read that took its snapshot
// before (Log.reads) before it cuts or empties any file; reads that start
// after see only the shorter list. Slices already handed out are the
// caller's: callers cut only above the high watermark, which no Slice
// crosses. Files are opened through a FileCache shared by all logs of a
// node, which bounds open descriptors.
package partition
