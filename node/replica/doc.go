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
// # Single copy (today)
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
// # With Raft (issue 14; not built yet)
//
// The same methods keep their meaning; only their insides change:
//
//   - Append (leader only, else ErrNotLeader, which the node answers with
//     NOT_LEADER_OR_FOLLOWER): the leader validates the batch, stamps its
//     base offset and partition leader epoch (= the Raft term; neither is
//     covered by the CRC) and proposes it; every replica appends the
//     proposed bytes verbatim, so offsets agree everywhere. Append returns
//     once the leader's log holds the batch (acks=1).
//   - WaitCommitted is acks=all: it returns once the batch is committed by a
//     majority, i.e. the high watermark (the Raft commit point, the last
//     offset of the last committed batch + 1) has passed it; a leader that
//     loses leadership before then fails it (the outcome is unknown).
//   - Read, OffsetForTime and the producer-state rebuild see only what is
//     below the high watermark; wake-ups fire when it moves, not on append.
//   - Leader, LeaderEpoch, ISR and Offline come from the Raft group's state
//     (leader and term, followers' progress) instead of gossip liveness.
//   - Retention, compaction and DeleteRecords never remove what is at or
//     above the commit point; a follower behind the log start gets a
//     snapshot (the leader's segments).
package replica
