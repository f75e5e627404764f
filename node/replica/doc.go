// Package replica owns one partition's replica on this node: the only door
// between the Kafka handlers (and the group coordinator's offsets log) and
// the partition's segment log (*partition.Log). It answers who leads the
// partition and in which leader epoch, which replicas are in sync and which
// are offline, appends with the producer's acks, reads up to the high
// watermark, and wakes long-polling fetches when the high watermark moves.
// Maintenance that touches the log (retention, compaction, DeleteRecords,
// scrub, topic configs) goes through it too, so that what it may drop is
// decided against the commit point.
//
// # Single copy (replication factor 1)
//
// A partition's data lives on its first replica only, which leads while
// gossip says it is alive; nobody leads otherwise (the partition is
// unavailable, never served empty by another replica). An append is
// committed once the log has it, fsynced or not as the topic's flush policy
// says, so the high watermark is the log end and acks=all waits for nothing
// more than acks=1. Every open of the leading replica starts a new leader
// epoch, as a restarted one-member Raft group elects itself in the next
// term: the newest epoch in the log's leader-epoch cache plus one (0 for a
// log that has none). The epoch is stamped into every batch's partition
// leader epoch, and the log records it in its leader-epoch-checkpoint with
// the first batch written in it, so it survives a restart and the next open
// goes above it. A replica that does not lead reports epoch -1 (unknown):
// nothing tells it the leader's.
//
// A single copy stays on this direct path rather than being a one-voter
// Raft group: there is nobody to agree with, nothing to fsync a Raft log
// for, and its log keeps what a Raft log does differently (retention and
// DeleteRecords at any offset; a Raft log moves its start only at entry
// bounds, through raftlog.Compact).
//
// # Replicated (replication factor > 1): Raft inside
//
// Open with a Driver makes the replica a member of its partition's Raft
// group (go.etcd.io/raft/v3): raft id = broker id + 1, voters = the
// partition's replicas from the catalog, bootstrapped alike on every
// replica (raftlog's snapshot at index 0); the log is the Raft log
// (raftlog: one entry per batch, term = leader epoch; Raft's own entries
// take no offset). The same methods
// keep their meaning:
//
//   - Propose/Append (leader only, else ErrNotLeader): the leader validates
//     the batch and proposes a copy; the driver's round persists the entry
//     (raftlog stamps base offset and epoch at the log end, the same on
//     every replica), and the proposal is matched to its entry FIFO within
//     the term (only the term's leader makes entries of that term), which
//     gives the offsets returned (acks=1). A replica takes appends only once
//     an entry of its own term is committed (WritableEpoch), so that what
//     an earlier leader left is below the high watermark when the node
//     rebuilds producer state from it.
//   - Commit.Wait is acks=all: the entry is committed, with the term it
//     was proposed in. An entry overwritten by another leader's, or a
//     proposal raft dropped after accepting it, fails with
//     ErrOutcomeUnknown (REQUEST_TIMED_OUT); WaitCommitted by offset is for
//     a single copy only.
//   - The high watermark is raftlog.NextOffset(applied index): the end of
//     the last committed entry. Read, OffsetForTime see only below it;
//     long polls and commit waits wake when it moves.
//   - Leader, LeaderEpoch (= term) come from the group's state; ISR is the
//     leader and the followers within DriverConfig.ISRMaxLagEntries that
//     answered within ISRMaxIdleTicks (a follower reports the leader
//     alone); Offline is gossip's view, plus, on the leader, the replicas
//     it has not heard from within ISRMaxIdleTicks.
//   - Leadership: raft decides (PreVote, CheckQuorum). MemberFailed is
//     gossip's hint: the replicas forget a failed leader (ForgetLeader, so
//     its lease does not hold their votes) and the next live replica in
//     succession order campaigns at once; a leader that is not the
//     preferred (first) replica hands leadership back (TransferLeader) when
//     the preferred one is alive, answering and caught up.
//   - Retention: the topic's retention by age and size picks an offset
//     (partition.RetentionPoint; the log's own retention is off) and the
//     last committed entry ending at or below it becomes the Raft snapshot
//     (raftlog.Compact), so nothing at or above the commit point goes. A
//     follower that needs entries below the leader's log start gets the
//     snapshot: its log restarts empty at the leader's start.
//   - Compaction: each replica cleans its own log, as Kafka's do, but only
//     below its Raft log, whose batches raft may still send byte for byte.
//     Before a pass the entries of the closed segments are sealed into the
//     snapshot (raftlog.Seal: the log start stays, the records below the
//     first entry become the snapshot's); a leader holds back for a
//     follower it heard from lately that has not matched them. A follower
//     that needs sealed entries gets the snapshot and, before raft steps
//     it, copies its records from the sender (snapcopy.go, over
//     DriverConfig.FetchSnapshot), so it holds the leader's cleaned bytes
//     at the leader's offsets.
//   - LogAppendTime: the leader stamps a batch once, before proposing it,
//     and every replica stores those bytes.
//   - DeleteRecords: a command entry (raftlog.DeleteRecordsCommand, kept
//     in the sidecar, no offset) every replica applies at its place in
//     the log (raftlog.DeleteBefore); the leader answers once it applied it.
//   - Configuration changes (confchange.go) move replicas: ChangeConf
//     adds a learner, promotes it, removes a voter (several at once enter
//     a joint configuration, which LeaveJoint leaves), leader only, one at
//     a time; never removing the leader, which transfers leadership first.
//     They are sidecar entries (no offset); a restart replays those after
//     the snapshot, and every snapshot records the configuration as of its
//     own entry. A joining replica (Config.Join) starts with none and gets
//     a snapshot: every replica seals its log at a learner's addition.
//     Replicas are the voters in the order SetReplicas (the catalog) gives.
//   - Repair (repair.go): a damaged replica (node/hosted's repair.go) is
//     fenced (Fence: it takes no leadership handed to it) and asks its
//     leader CaughtUpWithout it before throwing its log away; the leader
//     then hands it no leadership and, once told it rebuilds, counts its
//     stale match nowhere until it has taken the snapshot.
//   - Quiescence (quiesce.go): an idle group whose live replicas all hold
//     the leader's log stops ticking and sends nothing; anything but a
//     heartbeat's answer wakes it, and gossip's word (MemberFailed,
//     MemberJoined) wakes it for a replica's death or return, since a
//     sleeping follower's election timer is stopped.
//
// The Driver (driver.go) runs every group of a node: one ticker, a fixed
// pool of workers with each group hashed to one, no goroutine per
// partition. A worker's round steps what arrived (messages, unreachable
// reports, hints), ticks if due, and handles each Ready per raft's
// contract: snapshot, entries and hard state persisted first (fsynced with
// DriverConfig.Sync), then messages sent, then committed entries applied
// (the high watermark moved, proposals completed), then Advance; the
// transport is flushed once per round.
//
// # Locks
//
// A group's mu guards its RawNode and proposals and is held by its worker
// for a whole round, disk writes included: the round is the group's one
// writer. Nothing outside the worker waits for it on a hot path: a
// proposal (Enqueue) goes into the group's queue under inMu and the next
// round proposes it; messages, reports and hints arrive under inMu too;
// readers use what each round publishes in atomics. The order is
//
//	raftGroup.mu -> raftGroup.inMu -> worker.mu
//	Replica.mu (leaves: high watermark waiters, state)
//
// ConfirmLeader, DeleteRecords' command and configuration changes still
// take mu (waiting for the round in progress), off the produce and fetch
// paths.
package replica
