// Package hosted is the partitions this node hosts: Host, the set over the
// node's catalog (how a partition opens, open.go; the drop verdicts; the
// orphans' sweep at start; topic creation, deletion and alteration applied
// here; the upkeep over every open partition, upkeep.go), built on the
// set of open ones
// (Set: their reconcile with the catalog, the claims that let a partition
// open or close outside the locks, the mend of replicas stopped by a
// write error, the rebuild from their peers of damaged replicas
// (repair.go), and the close at shutdown with its one shutdown checkpoint,
// the catalog's word, the open and the quarantine injected by the owner
// through SetConfig), and each (Partition: its replica, its topic
// settings, its produced counters) with what it keeps beside its log: the
// producer state that makes idempotent and transactional appends safe
// (Producers: each producer's epoch, its last few batches' sequence
// numbers, whether its transaction is open, its markers), and the
// read_committed view of the log (TxnIndex: open transactions, hence the
// last stable offset, and aborted ones, with its checkpoint file). Both are
// derived from the partition's committed log, read through Log, so every
// replica that comes to lead or serve the partition builds the same state
// from its own copy; a tiered partition's replica starts its producer
// state from the snapshot uploaded with its last segment, kept beside it
// (producer_snapshot.go: SnapshotAt builds the one uploaded beside each
// segment, ProducerSeedFile is the last one, also after a restore). A Partition holds one of each; the Kafka handlers
// (node) call its methods (EnqueueIdempotent, SettleProducer,
// EnqueueMarker, TxnView, ...) and never take its locks themselves.
//
// Locks, outer first:
//
//	Set.planMu -> Set.mu              a reconcile plans under both (calling
//	                                  SetConfig's Wanted and Verdict), and
//	                                  Mend closes stopped replicas under
//	                                  planMu; opens, closes and quarantines
//	                                  run under neither, each partition
//	                                  claimed
//	Set.planMu -> mendState.mu        when each stopped replica was first
//	                                  seen stopped; a leaf
//	repairState.mu                    what each damaged replica last
//	                                  reported waiting for; a leaf, taken
//	                                  alone (claims go through planMu -> mu)
//	ShutdownPoints.mu                 the shutdown checkpoint's entries; a
//	                                  leaf
//	Partition.appendMu                the idempotence check and a batch's
//	                                  place in the log's order
//	                                  (replica.Enqueue), never the leader's
//	                                  round; held around every Producers
//	                                  method and around Rebuild: Producers
//	                                  has no lock of its own
//	TxnIndex.scanMu -> TxnIndex.mu    one request scans (Refresh), reading
//	                                  the log; mu only publishes what it found
//	TxnIndex.flushMu -> TxnIndex.mu   checkpoint writes run outside mu
//
// No lock of this package is held across a network call (a repair asks
// its leader holding only the partition's claim). planMu is held
// across Mend's close of stopped replicas (waited on only by reconciles). appendMu is held across a producer-state rebuild (a header
// scan of at most the last 100,000 offsets, and a read of the restore's
// producer seed file if there is one, when the replica starts leading in
// a new epoch) and a single-copy partition's Enqueue (the log's
// own write); scanMu across the scan's reads of the log, and flushMu
// across the checkpoint's write, waited on by nobody but the next scan or
// flush.
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
