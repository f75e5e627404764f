// Package txn is the transaction coordinator: the state of every
// transactional id whose __transaction_state partition this node leads,
// and the two-phase commit that ends a transaction.
//
// A transactional id lives in partition abs(javaHashCode(id)) % partitions
// of __transaction_state (the group coordinator's hash), whose leader is
// its coordinator. Every change of an id's state is first written to that
// partition as a record in Kafka's own schema (TxnMetadataKey v0 /
// TxnMetadataValue v0: producer id and epoch, timeout, state, partitions,
// timestamps) and only then applied in memory, so a coordinator that loads
// the partition after a failover rebuilds the same state by replaying it.
//
// Ending a transaction is two-phase, as in Kafka: EndTxn writes
// PrepareCommit (or PrepareAbort) and answers; the coordinator then has a
// commit (abort) marker written to every partition of the transaction
// (Markers, through each partition's leader and Raft like any batch) and,
// once all are acknowledged, writes CompleteCommit (CompleteAbort). A
// coordinator that loads a transaction left in a Prepare state finishes
// its markers. Markers are idempotent for readers: a repeated marker for a
// producer with no open transaction on a partition changes nothing.
//
// An Ongoing transaction older than its timeout is aborted with the
// producer's epoch bumped, so the abandoned producer is fenced.
package txn
