// Package hosted is what a partition hosted here keeps beside its log: the
// producer state that makes idempotent and transactional appends safe
// (Producers: each producer's epoch, its last few batches' sequence
// numbers, whether its transaction is open, its markers), and the
// read_committed view of the log (TxnIndex: open transactions, hence the
// last stable offset, and aborted ones, with its checkpoint file). Both are
// derived from the partition's committed log, read through Log, so every
// replica that comes to lead or serve the partition builds the same state
// from its own copy; node's localPartition holds one of each and wires them
// to the Kafka handlers.
//
// Locks, outer first:
//
//	(caller) localPartition.appendMu  held by node around every Producers
//	                                  method, and around Rebuild: Producers
//	                                  has no lock of its own
//	TxnIndex.scanMu -> TxnIndex.mu    one request scans (Refresh), reading
//	                                  the log; mu only publishes what it found
//	TxnIndex.flushMu -> TxnIndex.mu   checkpoint writes run outside mu
//
// No lock of this package is held across a network call; scanMu is held
// across the scan's reads of the log, and flushMu across the checkpoint's
// write, waited on by nobody but the next scan or flush.
package hosted

import (
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/partition"
)

// Log is the committed log of a hosted partition, as Producers.Rebuild and
// TxnIndex.Refresh read it: *replica.Replica is one. Read returns whole
// batches from the one holding offset, for at most maxBytes (the first batch
// whole regardless), never reaching the high watermark; the caller releases
// the Slice.
type Log interface {
	LogStartOffset() int64
	HighWatermark() int64
	LogEndOffset() int64
	Read(offset int64, maxBytes int) (*partition.Slice, error)
}

var _ Log = (*replica.Replica)(nil)
