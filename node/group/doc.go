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
package group
