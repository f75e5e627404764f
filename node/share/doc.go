// Package share owns share groups (KIP-932): queue semantics on the log.
// Any number of members read the same partitions together; each record is
// acquired by one member for a lock duration, acknowledged one by one
// (accept, release, reject), made available again when its lock lapses or
// it is released, and archived once delivered the group's delivery limit
// of times. The log itself is untouched and stays re-readable by ordinary
// consumer groups.
//
// It holds two independent halves, as Kafka splits them:
//
//   - Coordinator: a share group's membership and assignment, on the node
//     that coordinates the group id. Every member is assigned every
//     partition of the topics it subscribes to (records, not partitions,
//     are what members split), and its member epoch moves whenever that
//     assignment changes. Membership lives in memory: after the
//     coordinator moves, members are UNKNOWN_MEMBER_ID and join again,
//     which costs a share consumer nothing (it holds no partitions).
//   - Partitions: the share-partition state on a partition's leader — the
//     share-partition start offset (SPSO), the in-flight window above it
//     with every record's state and delivery count — and the share
//     sessions of the members fetching from this node. The window is
//     bounded (Config.MaxInFlight records), so acquisition stops at it.
//     Lock expiry needs no goroutine: each partition remembers its earliest
//     lock deadline and expires locks when it is next touched at or past
//     it; a long-polling fetch waits no longer than that deadline.
//     Acquisitions are not written to the state (a failover loses them
//     and a delivery count can come back one low, as in Kafka), except a
//     record's last delivery: the fetch writes it, as archived, before
//     the record leaves, so no failover delivers it past the limit.
//
// The log is reached only through the Log interface the caller passes in,
// so this package knows nothing of replicas or files.
//
// Node wires both halves into a broker (it knows the broker only through
// the Broker interface): made on first use, the state made durable in
// StateTopic by a Persister over the Stores, each on the leader of its
// StateTopic partition (this node's, or another's through its admin
// listener: ServeState), the group configs kept in cluster settings, and
// the offsets operations run on each share partition's leader (OnLeader),
// and the in-flight counts served to the CLI from the leader's admin API
// (ServeDescribe), which no Kafka API carries.
//
// Locks, in order: Partitions.mu (the maps of partitions and sessions) →
// sharePartition.mu (one partition's window). Coordinator.mu stands alone.
// No lock is held while the log is read: a fetch plans under the partition
// lock, reads with none, and acquires under it again, taking only what is
// still available.
package share
