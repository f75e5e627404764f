// Package group is Spool's consumer-group coordinator: the per-group
// state machine (Empty, PreparingRebalance, CompletingRebalance, Stable,
// Dead), member sessions and rebalance deadlines, static membership, and the
// committed offsets of every group, kept durable as records in the internal
// compact-by-key topic __consumer_offsets.
//
// Beside the classic groups it coordinates consumer-protocol groups
// (KIP-848, consumer.go): the broker assigns partitions itself with a
// server-side assignor and members reconcile towards it heartbeat by
// heartbeat. Both kinds share the shards and the committed offsets.
//
// Classic groups follow Apache Kafka's GroupCoordinator: the broker only relays the
// members' assignment protocols and picks one that every member supports; the
// leader member computes the assignment and hands it over in SyncGroup.
//
// The package knows nothing of sockets. Requests and responses are franz-go
// kmsg types so the broker's handlers stay thin; JoinGroup and SyncGroup block
// until the rebalance answers them, exactly as Kafka holds a connection's
// response until its delayed operation completes.
//
// Groups are sharded by __consumer_offsets partition
// (abs(javaHashCode(groupID)) % partitions, as Kafka does). A node serves the
// groups of the partitions it has loaded with Coordinator.Load, which replays
// that partition's records; every other group is answered NOT_COORDINATOR.
//
// Locking. Coordinator.mu guards the map of shards and is held alone. A
// shard's mu guards its groups, their members and timers; a group's writer
// (writer.go) orders its offset-record appends. The order is
//
//	groupWriter -> shard.mu
//
// and nothing is taken under shard.mu but leaves (logging, timers). An
// offset commit holds its group's writer throughout and the shard's mu only
// to check the commit and then to apply it, not across the append: a slow
// disk holds up no other group of the shard, and the group's commits reach
// the log and memory in one order, memory only once durable. Offset and
// group deletions do the same (a group being deleted refuses joiners with
// COORDINATOR_NOT_AVAILABLE meanwhile). The appends of a rebalance
// (JoinGroup, SyncGroup, consumer heartbeats, session expiry) still hold
// the shard's mu across the append.
package group
